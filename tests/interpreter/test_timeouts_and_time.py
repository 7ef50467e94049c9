"""Timeouts (one error: name/code ``timeout``), sleeps and the virtual clock."""

import asyncio
import time

from tests.interpreter.support import History, run

SLOW_CALL = """
functions: [{name: slow, type: custom, operation: slow}]
errors: [{name: tooSlow, code: timeout}]
%s
states:
- name: s
  type: operation
  %s
  actions: [{functionRef: slow}]
  onErrors: [{errorRef: tooSlow, transition: late}]
  end: true
- {name: late, type: inject, data: {late: true}, end: true}
"""


async def _slow(_):
    await asyncio.sleep(0.2)
    return {"done": True}


async def test_action_exec_timeout_raises_the_timeout_error():
    result = await run(SLOW_CALL % ("", "timeouts: {actionExecTimeout: PT0.02S}"), {}, functions={"slow": _slow})
    assert result.output == {"late": True}


async def test_state_exec_timeout_raises_the_timeout_error():
    result = await run(SLOW_CALL % ("", "timeouts: {stateExecTimeout: PT0.02S}"), {}, functions={"slow": _slow})
    assert result.output == {"late": True}


async def test_workflow_level_action_timeout_is_inherited_and_state_overrides_it():
    inherited = await run(SLOW_CALL % ("timeouts: {actionExecTimeout: PT0.02S}", ""), {}, functions={"slow": _slow})
    assert inherited.output == {"late": True}
    overridden = await run(SLOW_CALL % ("timeouts: {actionExecTimeout: PT0.02S}", "timeouts: {actionExecTimeout: PT1S}"),
                           {}, functions={"slow": _slow})
    assert overridden.output == {"done": True}


async def test_unhandled_timeout_fails_with_code_timeout():
    result = await run(SLOW_CALL.replace("  onErrors: [{errorRef: tooSlow, transition: late}]\n", "")
                       % ("", "timeouts: {actionExecTimeout: PT0.02S}"), {}, functions={"slow": _slow})
    assert result.status == "failed" and result.error["code"] == "timeout" and result.error["name"] == "timeout"


async def test_sleep_state_takes_no_real_time_on_the_virtual_clock():
    started = time.monotonic()
    result = await run("""
states:
- {name: nap, type: sleep, duration: P2D, transition: done}
- {name: done, type: inject, data: {woke: true}, end: true}
""")
    assert result.output == {"woke": True}
    assert time.monotonic() - started < 2


async def test_workflow_exec_timeout_interrupts_and_runs_run_before():
    result = await run("""
timeouts:
  workflowExecTimeout: {duration: PT1H, runBefore: cleanup}
states:
- {name: start, type: inject, data: {started: true}, transition: wait}
- {name: wait, type: sleep, duration: P1D, transition: never}
- {name: never, type: inject, data: {never: true}, end: true}
- {name: cleanup, type: inject, data: {cleaned: true}, usedForCompensation: true, end: true}
""")
    assert result.status == "failed" and result.error["code"] == "timeout"
    assert result.output == {"started": True, "cleaned": True}


async def test_workflow_exec_timeout_without_interrupt_finishes_the_current_state():
    history = History()
    result = await run("""
timeouts:
  workflowExecTimeout: {duration: PT1H, interrupt: false}
states:
- {name: wait, type: sleep, duration: PT2H, transition: next}
- {name: next, type: inject, data: {next: true}, end: true}
""", observer=history)
    assert result.error["code"] == "timeout"
    assert history.states() == ["wait"] and [r["state"] for r in history.of("state_exited")] == ["wait"]


async def test_string_state_exec_timeout_covers_retries_in_total():
    calls = []

    def failing(_):
        calls.append(1)
        raise RuntimeError("down")

    result = await run("""
functions: [{name: f, type: custom, operation: f}]
errors: [{name: down, code: RuntimeError}, {name: slow, code: timeout}]
retries: [{name: r, maxAttempts: 100, delay: PT10S}]
states:
- name: s
  type: operation
  timeouts: {stateExecTimeout: PT35S}
  actions: [{functionRef: f, retryRef: r}]
  onErrors: [{errorRef: slow, transition: late}]
  end: true
- {name: late, type: inject, data: {late: true}, end: true}
""", {}, functions={"f": failing})
    assert result.output == {"late": True}
    assert len(calls) == 4  # at 0, 10, 20, 30 s


async def test_action_sleep_before_and_after_use_the_engine_clock():
    history = History()
    result = await run("""
functions: [{name: f, type: custom, operation: f}]
states:
- name: s
  type: operation
  actions: [{functionRef: f, sleep: {before: PT1H, after: PT1H}}]
  end: true
""", {}, functions={"f": lambda _: {"called": True}}, observer=history)
    assert result.output == {"called": True}


async def test_waiting_for_an_event_nobody_sends_reports_stalled_instead_of_hanging():
    result = await run("""
events: [{name: never, type: never, source: nowhere}]
states:
- {name: start, type: inject, data: {}, transition: wait}
- name: wait
  type: event
  onEvents: [{eventRefs: [never]}]
  end: true
""")
    assert result.status == "failed" and result.error["code"] == "stalled"


async def test_state_timeout_passes_the_data_reached_so_far_to_on_errors():
    calls = []
    result = await run("""
functions: [{name: step, type: custom, operation: step}]
errors: [{name: TooSlow, code: timeout}]
states:
- name: Steps
  type: operation
  timeouts: {stateExecTimeout: PT12M}
  actions:
  - {functionRef: {refName: step, arguments: {n: 1}}, sleep: {before: PT5M}}
  - {functionRef: {refName: step, arguments: {n: 2}}, sleep: {before: PT5M}}
  - {functionRef: {refName: step, arguments: {n: 3}}, sleep: {before: PT5M}}
  onErrors: [{errorRef: TooSlow, transition: Late}]
  end: true
- {name: Late, type: inject, data: {late: true}, end: true}
""", {}, functions={"step": lambda args: calls.append(args["n"]) or {f"step{args['n']}": True}})
    assert calls == [1, 2]
    assert result.output == {"step1": True, "step2": True, "late": True}
