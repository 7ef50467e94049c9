"""A runaway expression fails its own evaluation with a documented code, on time, while every other
instance of the process keeps running (specs/limits.md)."""

from __future__ import annotations

import asyncio
import gc
import time
from pathlib import Path
from typing import Any

import pytest

from xflow_runtime import EvaluationLimits, Runtime, WorkflowFailed
from xflow_runtime.expressions import compile_expression
from xflow_runtime.expressions.evaluator_pool import POOL

BUDGET = 0.5
RUNAWAY = ("last(repeat(1))", "[limit(100000000; repeat(1))] | length > 5", "[range(30000000)] | length")
CODES = ("ExpressionTimeout", "ExpressionTooLarge")

HEADER = f"""
specVersion: "0.8"
timeouts: {{evaluationTimeout: PT{BUDGET}S}}
errors:
  - {{name: slow, code: ExpressionTimeout}}
  - {{name: big, code: ExpressionTooLarge}}
"""
CAUGHT = """
  - name: Caught
    type: inject
    data: {caught: true}
    end: true
"""
ON_ERRORS = "    onErrors: [{errorRef: slow, transition: Caught}, {errorRef: big, transition: Caught}]\n"


def in_filter(text: str) -> str:
    return HEADER + f"""id: in-filter
start: Spin
functions: [{{name: echo, type: custom, operation: echo}}]
states:
  - name: Spin
    type: operation
    actions: [{{functionRef: {{refName: echo, arguments: {{n: 1}}}}, actionDataFilter: {{useResults: false}}}}]
    stateDataFilter: {{output: '${{ {text} }}'}}
    end: true
""" + ON_ERRORS + CAUGHT


def in_switch(text: str) -> str:
    return HEADER + f"""id: in-switch
start: Spin
states:
  - name: Spin
    type: switch
    dataConditions: [{{condition: '${{ {text} }}', end: true}}]
    defaultCondition: {{end: true}}
""" + ON_ERRORS + CAUGHT


def in_argument(text: str) -> str:
    return HEADER + f"""id: in-argument
start: Spin
functions: [{{name: echo, type: custom, operation: echo}}]
states:
  - name: Spin
    type: operation
    actions: [{{functionRef: {{refName: echo, arguments: {{n: '${{ {text} }}'}}}}}}]
    end: true
""" + ON_ERRORS + CAUGHT


def in_expression_function(text: str) -> str:
    return HEADER + f"""id: in-function
start: Spin
functions: [{{name: spin, type: expression, operation: '{text}'}}]
states:
  - name: Spin
    type: operation
    actions: [{{functionRef: spin}}]
    end: true
""" + ON_ERRORS + CAUGHT


TICKER = """
id: ticker
specVersion: "0.8"
start: Tick
functions: [{name: tick, type: custom, operation: tick}]
states:
  - name: Tick
    type: operation
    actions: [{functionRef: tick, sleep: {after: PT0.1S}, actionDataFilter: {useResults: false}}]
    transition: Count
  - name: Count
    type: inject
    data: {}
    stateDataFilter: {output: "${ {n: (.n + 1)} }"}
    transition: Again
  - name: Again
    type: switch
    dataConditions: [{condition: "${ .n < 15 }", transition: Tick}]
    defaultCondition: {end: true}
"""


async def echo(n: Any) -> Any:
    return n


async def watch_loop(stop: asyncio.Event, lags: list[float]) -> None:
    """How late a 10 ms timer fires, over and over: the event loop's lag."""
    while not stop.is_set():
        started = time.monotonic()
        await asyncio.sleep(0.01)
        lags.append(time.monotonic() - started - 0.01)


@pytest.mark.parametrize("placement", [in_filter, in_switch, in_argument, in_expression_function])
@pytest.mark.parametrize("text", RUNAWAY)
async def test_a_runaway_expression_fails_on_time_and_other_instances_keep_running(
        placement: Any, text: str, tmp_path: Path) -> None:
    ticks: list[float] = []

    async def tick(**_: Any) -> None:
        ticks.append(time.monotonic())

    (tmp_path / "spin.yaml").write_text(placement(text))
    (tmp_path / "ticker.yaml").write_text(TICKER)
    # A full collection walks every object earlier tests left alive (tens of ms in a long pytest
    # process): keep those out of the measurement, which is about what the runtime blocks.
    frozen_before = gc.get_freeze_count()  # litellm's load freezes its objects: keep them frozen
    gc.collect()
    gc.freeze()
    history: list[dict[str, Any]] = []
    async with Runtime(functions={"echo": echo, "tick": tick}, on_history=history.append) as runtime:
        spin, ticker = runtime.load(tmp_path / "spin.yaml"), runtime.load(tmp_path / "ticker.yaml")
        stop, lags = asyncio.Event(), []
        started = time.monotonic()
        spinning = await runtime.start(spin, {})
        ticking = await runtime.start(ticker, {"n": 0})
        watcher = asyncio.create_task(watch_loop(stop, lags))  # the lag while the evaluation is stuck
        assert await spinning.result() == {"caught": True}
        spin_took = time.monotonic() - started
        assert await ticking.result() == {"n": 15}
        stop.set()
        await watcher

    if not frozen_before:
        gc.unfreeze()
    failures = [event["error"] for event in history if event["event"] == "state_failed"]
    assert len(failures) == 1 and failures[0]["code"] in CODES and failures[0]["state"] == "Spin"
    assert spin_took < BUDGET + 1.0
    assert max(lags) < 0.05, f"the event loop was blocked for {max(lags):.3f} s"
    gaps = [later - earlier for earlier, later in zip(ticks, ticks[1:])]
    assert all(0.1 - 0.001 <= gap < 0.1 + 0.05 for gap in gaps), gaps  # each timer on schedule


RETRIED = HEADER + """id: retried
start: Spin
functions: [{name: echo, type: custom, operation: echo}]
retries: [{name: twice, maxAttempts: 2, delay: PT0.01S}]
states:
  - name: Spin
    type: operation
    actions:
      - functionRef: {refName: echo, arguments: {n: '${ last(repeat(1)) }'}}
        retryRef: twice
        retryableErrors: [slow]
    end: true
""" + ON_ERRORS + CAUGHT


async def test_retries_match_the_budget_codes_like_any_error(tmp_path: Path) -> None:
    (tmp_path / "retried.yaml").write_text(RETRIED)
    history: list[dict[str, Any]] = []
    async with Runtime(functions={"echo": echo}, on_history=history.append) as runtime:
        handle = await runtime.start(runtime.load(tmp_path / "retried.yaml"), {})
        assert await handle.result() == {"caught": True}
    retries = [event for event in history if event["event"] == "action_retry"]
    assert [event["error"]["code"] for event in retries] == ["ExpressionTimeout"]


SIZED = """
id: sized
specVersion: "0.8"
start: Build
functions: [{name: echo, type: custom, operation: echo}]
errors: [{name: big, code: ExpressionTooLarge}]
states:
  - name: Build
    type: operation
    actions: [{functionRef: {refName: echo, arguments: {n: 1}}, actionDataFilter: {useResults: false}}]
    stateDataFilter: {output: '${ if .text then ("x" * .n | length) else [range(.n)] end }'}
    onErrors: [{errorRef: big, transition: Caught}]
    end: true
""" + CAUGHT


@pytest.mark.parametrize(("limits", "big"), [
    (EvaluationLimits(max_result_bytes=10_000), {"text": False, "n": 100_000}),  # the result
    (EvaluationLimits(max_memory_bytes=300 * 1024 * 1024), {"text": True, "n": 400_000_000}),  # memory
])
async def test_a_result_or_memory_beyond_the_budget_is_expression_too_large(
        limits: EvaluationLimits, big: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "sized.yaml").write_text(SIZED)
    history: list[dict[str, Any]] = []
    async with Runtime(functions={"echo": echo}, evaluation_limits=limits, on_history=history.append) as runtime:
        plan = runtime.load(tmp_path / "sized.yaml")
        small = await (await runtime.start(plan, {"text": big["text"], "n": 100})).result()
        assert small == (100 if big["text"] else list(range(100)))
        assert await (await runtime.start(plan, big)).result() == {**big, "caught": True}
    failures = [event["error"] for event in history if event["event"] == "state_failed"]
    assert [failure["code"] for failure in failures] == ["ExpressionTooLarge"]


async def test_the_fast_path_stays_in_process(tmp_path: Path) -> None:
    (tmp_path / "ticker.yaml").write_text(TICKER)
    assert not compile_expression("{n: (.n + 1)}").isolated and not compile_expression(".n < 15").isolated
    assert compile_expression("[.[] | . + 1]").isolated
    started = POOL.started

    async def tick(**_: Any) -> None:
        return None

    async with Runtime(functions={"tick": tick}) as runtime:
        plan = runtime.load(tmp_path / "ticker.yaml")
        assert await (await runtime.start(plan, {"n": 13})).result() == {"n": 15}
    assert POOL.started == started  # no evaluator process was needed


def test_a_string_repeated_by_a_number_from_the_data_is_bounded() -> None:
    """``.s * .n`` is in the pure-Python subset, but repeating a string is not linear in the data:
    that one case runs in the pool, under the budget."""
    from xflow_runtime.errors import ExpressionTimeout, ExpressionTooLarge

    expression = compile_expression(".s * .n")
    assert not expression.isolated
    assert expression.evaluate({"s": "ab", "n": 3}) == "ababab"
    with pytest.raises((ExpressionTooLarge, ExpressionTimeout)):  # whichever budget is reached first
        expression.evaluate({"s": "abcdefgh", "n": 10_000_000})


TIMED = """
id: timed
specVersion: "0.8"
timeouts: {evaluationTimeout: PT20S, workflowExecTimeout: PT0.6S}
start: Spin
errors: [{name: late, code: timeout}]
states:
  - name: Spin
    type: switch
    timeouts: {stateExecTimeout: PT0.3S}
    dataConditions: [{condition: '${ last(repeat(1)) }', end: true}]
    defaultCondition: {end: true}
    onErrors: [{errorRef: late, transition: Filter}]
  - name: Filter
    type: inject
    data: {}
    stateDataFilter: {output: '${ last(repeat(1)) }'}
    end: true
"""


async def test_instance_timeouts_fire_on_time_while_an_evaluation_runs(tmp_path: Path) -> None:
    """The state timeout (0.3 s) stops the switch's evaluation long before its 20 s budget; the
    workflow timeout (0.6 s) then stops the next state's filter."""
    (tmp_path / "timed.yaml").write_text(TIMED)
    history: list[dict[str, Any]] = []
    async with Runtime(on_history=history.append) as runtime:
        started = time.monotonic()
        handle = await runtime.start(runtime.load(tmp_path / "timed.yaml"), {})
        with pytest.raises(WorkflowFailed) as failure:
            await handle.result()
        took = time.monotonic() - started
    assert failure.value.error["code"] == "timeout" and "workflowExecTimeout" in failure.value.error["message"]
    failed = [event["error"]["code"] for event in history if event["event"] == "state_failed"]
    assert failed[0] == "timeout"  # the switch, stopped by its stateExecTimeout
    assert took < 0.6 + 1.0


async def test_the_pool_caps_its_processes_and_queues_evaluations_beyond_them() -> None:
    """Many evaluations at once, one stuck: at most ``limit`` processes live; the others wait their
    turn, and each still gets its whole budget once it has a process."""
    from xflow_runtime.errors import ExpressionTimeout
    from xflow_runtime.expressions.evaluator_pool import EvaluatorPool

    pool = EvaluatorPool(size=1, limit=2)
    limits = EvaluationLimits(timeout=0.5)
    try:
        results = await asyncio.gather(pool.run("last(repeat(1))", None, limits, "spin"),
                                       *[pool.run(".[0] * 2", [n], limits, "double") for n in range(10)],
                                       return_exceptions=True)
    finally:
        pool.close()
    assert isinstance(results[0], ExpressionTimeout)
    assert results[1:] == [[n * 2] for n in range(10)]
    assert pool.started <= 3  # two live at most: one killed with the stuck evaluation, one replacing it
