"""Properties over varying inputs: ordering of foreach/parallel results, retry counting, delays."""

import asyncio

from hypothesis import given, settings, strategies as st

from xflow_runtime.engine.inprocess import run_workflow_sync
from xflow_runtime.errors import WorkflowError
from xflow_runtime.expressions import merge
from xflow_runtime.interpreter.retries import next_delay
from xflow_runtime.plan.model import RetryDef

from tests.interpreter.support import plan

FOREACH = plan("""
functions: [{name: f, type: custom, operation: f}]
states:
- name: each
  type: foreach
  mode: %s
  inputCollection: .items
  iterationParam: x
  outputCollection: .out
  actions: [{functionRef: {refName: f, arguments: {x: "${ .x }"}}}]
  end: true
""" % "parallel")
FOREACH_SEQUENTIAL = plan("""
functions: [{name: f, type: custom, operation: f}]
states:
- name: each
  type: foreach
  mode: sequential
  inputCollection: .items
  iterationParam: x
  outputCollection: .out
  actions: [{functionRef: {refName: f, arguments: {x: "${ .x }"}}}]
  end: true
""")


async def _delayed_double(arguments):
    await asyncio.sleep(0)  # yield, so completion order differs from input order
    if arguments["x"] % 3 == 0:
        await asyncio.sleep(0)
    return arguments["x"] * 2


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-50, 50), max_size=12), st.sampled_from([FOREACH, FOREACH_SEQUENTIAL]))
def test_foreach_output_is_in_input_order(items, compiled):
    result = run_workflow_sync(compiled, {"items": items}, functions={"f": _delayed_double})
    assert result.output["out"] == [x * 2 for x in items]


BRANCHES = [{"k": 1, "list": [1]}, {"k": 2, "list": [2, 1]}, {"k": 3, "other": {"a": 1}}, {"list": [3]}]


@settings(max_examples=25, deadline=None)
@given(st.permutations(range(4)), st.dictionaries(st.sampled_from(["k", "list", "z"]), st.integers(0, 3), max_size=2))
def test_parallel_join_equals_merging_branch_results_in_definition_order(finish_order, initial):
    async def branch(arguments):
        for _ in range(finish_order.index(arguments["i"])):
            await asyncio.sleep(0)
        return BRANCHES[arguments["i"]]

    branches = "\n".join(
        f"  - {{name: b{i}, actions: [{{functionRef: {{refName: f, arguments: {{i: {i}}}}}}}]}}" for i in range(4))
    compiled = plan(f"""
functions: [{{name: f, type: custom, operation: f}}]
states:
- name: par
  type: parallel
  branches:
{branches}
  end: true
""")
    result = run_workflow_sync(compiled, dict(initial), functions={"f": branch})
    expected = dict(initial)
    for i in range(4):
        expected = merge(expected, merge(dict(initial), BRANCHES[i]))
    assert result.output == expected


RETRY = plan("""
functions: [{name: f, type: custom, operation: f}]
errors: [{name: busy, code: "503"}]
retries: [{name: r, maxAttempts: 4, delay: PT1S, multiplier: 3}]
states: [{name: s, type: operation, actions: [{functionRef: f, retryRef: r}], end: true}]
""")


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 8))
def test_attempts_are_failures_plus_one_up_to_max_attempts(failures):
    calls = []

    def flaky(_):
        calls.append(1)
        if len(calls) <= failures:
            raise WorkflowError("busy", status=503)
        return {"ok": True}

    result = run_workflow_sync(RETRY, {}, functions={"f": flaky})
    assert len(calls) == min(failures + 1, 4)
    assert result.ok == (failures < 4)


@settings(deadline=None)
@given(st.floats(0, 100), st.floats(1, 4), st.floats(0, 10), st.floats(0, 1), st.floats(1, 500))
def test_delays_grow_and_respect_max_delay(delay, multiplier, increment, jitter, max_delay):
    strategy = RetryDef("r", 10, delay=delay, multiplier=multiplier, increment=increment, max_delay=max_delay,
                        jitter_fraction=jitter)
    previous = None
    for attempt in range(1, 8):
        current = next_delay(strategy, attempt, previous, "seed")
        assert 0 <= current <= max_delay
        previous = current
