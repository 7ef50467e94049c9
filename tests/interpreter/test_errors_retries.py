"""Error matching, onErrors routing, retries (series, counting, gating) and autoRetries."""

import pytest

from xflow_runtime.errors import WorkflowError
from xflow_runtime.interpreter.retries import next_delay
from xflow_runtime.plan.model import RetryDef

from tests.interpreter.support import History, run

CATCHING = """
functions: [{name: f, type: custom, operation: f}]
errors: [{name: caught, code: '%s'}]
states:
- name: s
  type: operation
  actions: [{functionRef: f}]
  onErrors: [{errorRef: caught, transition: handled}]
  end: true
- {name: handled, type: inject, data: {handled: true}, end: true}
"""


def _raise(exc):
    def function(_):
        raise exc
    return function


@pytest.mark.parametrize("code, exc", [
    ("ValueError", ValueError("bad")),
    ("builtins.ValueError", ValueError("bad")),
    ("ArithmeticError", ZeroDivisionError("division")),  # a base class matches
    ("java.lang.IllegalArgumentException", ValueError("bad")),
    ("503", WorkflowError("unavailable", status=503)),
    ("quota", WorkflowError("over", code="quota")),
    (r"/missing order \w+/i", RuntimeError("Missing Order id")),
])
async def test_error_code_matches(code, exc):
    result = await run(CATCHING % code, {}, functions={"f": _raise(exc)})
    assert result.output == {"handled": True}


@pytest.mark.parametrize("code, exc", [
    ("KeyError", ValueError("bad")),
    ("/^order/", RuntimeError("Missing order")),  # case-sensitive and anchored
    ("404", WorkflowError("unavailable", status=503)),
])
async def test_error_code_does_not_match(code, exc):
    result = await run(CATCHING % code, {}, functions={"f": _raise(exc)})
    assert result.status == "failed" and result.error["state"] == "s"


async def test_unhandled_error_fails_with_error_dict():
    result = await run(CATCHING % "KeyError", {}, functions={"f": _raise(WorkflowError("boom", name="x", code="c"))})
    assert result.error == {"name": "x", "code": "c", "status": None, "message": "boom", "state": "s"}


async def test_first_matching_on_errors_entry_wins_and_errors_refs_list_works():
    result = await run("""
functions: [{name: f, type: custom, operation: f}]
errors: [{name: a, code: ValueError}, {name: b, code: Exception}]
states:
- name: s
  type: operation
  actions: [{functionRef: f}]
  onErrors: [{errorRefs: [b, a], transition: first}, {errorRef: a, transition: second}]
  end: true
- {name: first, type: inject, data: {route: first}, end: true}
- {name: second, type: inject, data: {route: second}, end: true}
""", {}, functions={"f": _raise(ValueError("x"))})
    assert result.output == {"route": "first"}


async def test_on_errors_end_completes_with_unfiltered_data():
    result = await run("""
functions: [{name: f, type: custom, operation: f}]
errors: [{name: e, code: ValueError}]
states:
- name: s
  type: operation
  stateDataFilter: {output: "${ {filtered: true} }"}
  actions: [{functionRef: g}, {functionRef: f}]
  onErrors: [{errorRef: e, end: true}]
  end: true
""".replace("functions: [", "functions: [{name: g, type: custom, operation: g}, "), {"in": 1},
        functions={"f": _raise(ValueError("x")), "g": lambda _: {"g": 1}})
    # state data at the failure (including the first action's result), output filter not applied
    assert result.status == "completed" and result.output == {"in": 1, "g": 1}


# --- retries -----------------------------------------------------------------------------------

def _delays(strategy: RetryDef, n: int) -> list[float]:
    delays, previous = [], None
    for attempt in range(1, n + 1):
        previous = next_delay(strategy, attempt, previous, "seed")
        delays.append(previous)
    return delays


def test_retry_series_increment_multiplier_and_max_delay():
    assert _delays(RetryDef("r", 5, delay=10, increment=2), 4) == [10, 12, 14, 16]
    assert _delays(RetryDef("r", 5, delay=10, multiplier=2), 4) == [10, 20, 40, 80]
    assert _delays(RetryDef("r", 5, delay=10, multiplier=2, max_delay=30), 4) == [10, 20, 30, 30]


def test_jitter_is_bounded_and_deterministic():
    strategy = RetryDef("r", 5, delay=10, jitter_fraction=0.5)
    first = _delays(strategy, 4)
    assert first == _delays(strategy, 4)
    assert all(5 <= d <= 15 for d in first[:1])
    absolute = RetryDef("r", 5, delay=10, jitter_seconds=2)
    assert all(8 <= d <= 12 for d in _delays(absolute, 4))


RETRYING = """
functions: [{name: f, type: custom, operation: f}]
errors: [{name: unavailable, code: "503"}, {name: other, code: KeyError}]
retries: [{name: r, maxAttempts: %d, delay: PT10S, multiplier: 2}]
states:
- name: s
  type: operation
  actions: [{functionRef: f, retryRef: r %s}]
  onErrors: [{errorRef: unavailable, transition: gaveUp}]
  end: true
- {name: gaveUp, type: inject, data: {gaveUp: true}, end: true}
"""


def _flaky(failures: int, error=None):
    calls = []

    def function(_):
        calls.append(1)
        if len(calls) <= failures:
            raise error or WorkflowError("busy", status=503)
        return {"ok": len(calls)}
    return function, calls


async def test_max_attempts_counts_the_first_attempt_and_waits_follow_the_series():
    function, calls = _flaky(10)
    history = History()
    result = await run(RETRYING % (4, ""), {}, functions={"f": function}, observer=history)
    assert len(calls) == 4
    assert [r["delay"] for r in history.of("action_retry")] == [10, 20, 40]
    assert result.output == {"gaveUp": True}


async def test_retry_succeeds_before_running_out():
    function, calls = _flaky(2)
    result = await run(RETRYING % (5, ""), {}, functions={"f": function})
    assert result.output == {"ok": 3}


async def test_retryable_errors_limit_which_errors_retry():
    function, calls = _flaky(10)
    result = await run(RETRYING % (5, ", retryableErrors: [other]"), {}, functions={"f": function})
    assert len(calls) == 1 and result.output == {"gaveUp": True}


async def test_unknown_error_is_never_retried_without_auto_retries():
    function, calls = _flaky(10, TypeError("unknown"))
    result = await run(RETRYING % (5, ""), {}, functions={"f": function})
    assert len(calls) == 1 and result.status == "failed" and result.error["code"] == "TypeError"


async def test_no_retry_ref_means_no_retries():
    function, calls = _flaky(10)
    result = await run((RETRYING % (5, "")).replace(", retryRef: r", ""), {}, functions={"f": function})
    assert len(calls) == 1 and result.output == {"gaveUp": True}


AUTO = """
autoRetries: true
functions: [{name: f, type: custom, operation: f}]
errors: [{name: fatal, code: ValueError}]
states:
- name: s
  type: operation
  actions: [{functionRef: f %s}]
  end: true
"""


async def test_auto_retries_retry_unknown_errors_with_the_default_strategy():
    function, calls = _flaky(3, TypeError("flaky"))
    history = History()
    result = await run(AUTO % "", {}, functions={"f": function}, observer=history)
    assert result.output == {"ok": 4}
    assert [r["delay"] for r in history.of("action_retry")] == [1, 2, 4]


async def test_auto_retries_default_gives_up_after_five_attempts():
    function, calls = _flaky(100, TypeError("down"))
    result = await run(AUTO % "", {}, functions={"f": function})
    assert len(calls) == 5 and result.status == "failed"


async def test_auto_retries_skip_non_retryable_errors():
    function, calls = _flaky(100, ValueError("fatal"))
    result = await run(AUTO % ", nonRetryableErrors: [fatal]", {}, functions={"f": function})
    assert len(calls) == 1 and result.status == "failed"


async def test_async_invocation_is_not_retried_and_never_fails_the_workflow():
    calls = []

    def failing(_):
        calls.append(1)
        raise RuntimeError("email server down")

    result = await run("""
autoRetries: true
functions: [{name: emailFunction, type: custom, operation: email}]
states:
- name: send
  type: operation
  actions: [{functionRef: {refName: emailFunction, invoke: async}}]
  end: true
""", {"customer": "a"}, functions={"emailFunction": failing})
    assert result.output == {"customer": "a"} and calls == [1]


async def test_foreach_input_collection_must_be_an_array():
    result = await run("""
functions: [{name: f, type: custom, operation: f}]
errors: [{name: bad, code: invalidInputCollection}]
states:
- name: each
  type: foreach
  inputCollection: .items
  actions: [{functionRef: f}]
  onErrors: [{errorRef: bad, transition: fallback}]
  end: true
- {name: fallback, type: inject, data: {fallback: true}, end: true}
""", {"items": {"not": "array"}}, functions={"f": lambda _: None})
    assert result.output["fallback"] is True


async def test_missing_function_implementation_is_a_clear_failure():
    result = await run("""
functions: [{name: nothere, type: custom, operation: "python:no.such.module:fn"}]
states: [{name: s, type: operation, actions: [{functionRef: nothere}], end: true}]
""", {})
    assert result.status == "failed" and result.error["state"] == "s" and result.error["message"]
