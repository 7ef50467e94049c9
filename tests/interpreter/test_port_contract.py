"""The interpreter touches the outside world only through the engine port, with deterministic
step names; switch and event-state details that the state tests do not cover."""

import asyncio

from xflow_runtime.interpreter import ExecutionContext, execute

from tests.interpreter.support import event, plan, run


class RecordingPort:
    """An engine port that runs effects directly and records every call the interpreter makes."""

    def __init__(self, events=()):
        self.calls: list[tuple] = []
        self.clock = 1_000_000.0
        self.events = list(events)
        self.ids = 0

    async def run_step(self, name, effect):
        self.calls.append(("step", name))
        return await effect()

    async def sleep(self, seconds):
        self.calls.append(("sleep", seconds))
        self.clock += seconds

    async def wait_event(self, topic, timeout):
        self.calls.append(("wait_event", topic, timeout))
        return self.events.pop(0) if self.events else None

    async def now(self):
        return self.clock

    async def new_id(self):
        self.ids += 1
        return f"id-{self.ids}"


WORKFLOW = """
functions: [{name: f, type: custom, operation: f}, {name: inc, type: expression, operation: ". + 1"}]
errors: [{name: busy, code: RuntimeError}]
retries: [{name: r, maxAttempts: 3, delay: PT5S}]
events: [{name: done, type: done, kind: produced}]
states:
- name: loop
  type: operation
  actions:
  - {name: call, functionRef: f, retryRef: r}
  - {functionRef: inc, actionDataFilter: {fromStateData: .n, toStateData: .n}}
  transition: check
- name: check
  type: switch
  dataConditions: [{condition: "${ .n < 2 }", transition: loop}]
  defaultCondition: {transition: fan}
- name: fan
  type: parallel
  branches:
  - {name: a, actions: [{functionRef: {refName: f, arguments: {b: a}}}]}
  - {name: b, actions: [{functionRef: {refName: f, arguments: {b: b}}}]}
  end: {produceEvents: [{eventRef: done}]}
"""


def _flaky():
    calls = []

    def function(arguments):
        calls.append(arguments)
        if len(calls) == 1:
            raise RuntimeError("busy")
        return {}
    return function


async def _execute(port):
    context = ExecutionContext(functions={"f": _flaky()}, instance_id="inst", event_sink=lambda e: None)
    return await execute(plan(WORKFLOW), {"n": 0}, port=port, context=context)


async def test_every_effect_goes_through_the_port_with_deterministic_step_names():
    first, second = RecordingPort(), RecordingPort()
    result = await _execute(first)
    await _execute(second)
    assert result.ok and result.output == {"n": 2}
    assert first.calls == second.calls
    assert first.calls == [
        ("step", "1:loop/0:call#1"),
        ("sleep", 5.0),
        ("step", "1:loop/0:call#2"),
        ("step", "3:loop/0:call#1"),
        ("step", "5:fan/b0/0:f#1"),
        ("step", "5:fan/b1/0:f#1"),
        ("step", "5:fan/produce:done:emit"),
    ]


async def test_produced_event_ids_and_times_come_from_the_port():
    port = RecordingPort()
    result = await _execute(port)
    produced = result.produced_events[0]
    assert produced["id"].startswith("id-") and produced["time"].startswith("1970-01-12T13:46:4")


async def test_switch_matches_only_json_true_and_takes_the_first_true_condition():
    document = """
states:
- name: s
  type: switch
  dataConditions:
  - {condition: "${ 1 }", transition: one}
  - {condition: "${ \\"true\\" }", transition: one}
  - {condition: "${ .x }", transition: one}
  - {condition: "${ true }", transition: two}
  - {condition: "${ true }", transition: three}
  defaultCondition: {transition: one}
- {name: one, type: inject, data: {to: one}, end: true}
- {name: two, type: inject, data: {to: two}, end: true}
- {name: three, type: inject, data: {to: three}, end: true}
"""
    assert (await run(document, {"x": None})).output == {"x": None, "to": "two"}


async def test_output_filter_applies_when_a_switch_condition_ends_the_workflow():
    result = await run("""
states:
- name: s
  type: switch
  stateDataFilter: {output: "${ {kept: .a} }"}
  dataConditions: [{condition: "${ .a == 1 }", end: true}]
  defaultCondition: {end: true}
""", {"a": 1, "b": 2})
    assert result.output == {"kept": 1}


async def test_exclusive_start_event_state_ignores_event_timeout():
    result = await run("""
events: [{name: E, type: t, source: s}]
states:
- {name: start, type: event, timeouts: {eventTimeout: PT1S}, onEvents: [{eventRefs: [E]}], end: true}
""", {}, events=[event("t", "s", {"got": True})])
    assert result.output == {"got": True}


async def test_virtual_timers_fire_in_deadline_order():
    order = []

    async def mark(arguments):
        order.append(arguments["name"])
        return None

    await run("""
functions: [{name: mark, type: custom, operation: mark}]
states:
- name: par
  type: parallel
  branches:
  - {name: slow, actions: [{functionRef: {refName: mark, arguments: {name: slow}}, sleep: {before: PT3H}}]}
  - {name: fast, actions: [{functionRef: {refName: mark, arguments: {name: fast}}, sleep: {before: PT1H}}]}
  - {name: mid, actions: [{functionRef: {refName: mark, arguments: {name: mid}}, sleep: {before: PT2H}}]}
  end: true
""", {}, functions={"mark": mark})
    assert order == ["fast", "mid", "slow"]


async def test_transition_compensates_before_producing_events():
    sink = []
    calls = []
    result = await run("""
functions: [{name: f, type: custom, operation: f}]
events: [{name: moved, type: moved, kind: produced}]
states:
- {name: A, type: inject, data: {}, compensatedBy: undoA, transition: B}
- name: B
  type: inject
  data: {b: 1}
  transition: {nextState: C, compensate: true, produceEvents: [{eventRef: moved, data: "${ .undone }"}]}
- {name: C, type: inject, data: {c: 1}, end: true}
- {name: undoA, type: operation, usedForCompensation: true, actions: [{functionRef: f}], end: true}
""", {}, functions={"f": lambda _: calls.append("undo") or {"undone": True}}, event_sink=sink.append)
    assert calls == ["undo"] and sink[0]["data"] is True
    assert result.output == {"b": 1, "undone": True, "c": 1}


async def test_event_source_must_match_exactly():
    result = await run("""
events: [{name: E, type: t, source: /rooms/kitchen}]
states:
- {name: s, type: event, timeouts: {eventTimeout: PT1M}, onEvents: [{eventRefs: [E]}], end: true}
""".replace("name: s, type: event", "name: s, type: event"), {"none": True},
        events=[event("t", "/rooms/+", {"wild": 1}), event("t", "/rooms/kitchen/", {"slash": 1})])
    # start state: exclusive, so the timeout is ignored and nothing matching ever arrives
    assert result.error["code"] == "stalled"


async def test_action_condition_sees_state_data_not_the_from_state_data_input():
    seen = []
    await run("""
functions: [{name: f, type: custom, operation: f}]
states:
- name: s
  type: operation
  actions: [{functionRef: f, condition: "${ .go }", actionDataFilter: {fromStateData: .inner}}]
  end: true
""", {"go": True, "inner": {"x": 1}}, functions={"f": lambda args: seen.append(args)})
    assert seen == [{"x": 1}]


async def test_action_exec_timeout_applies_to_each_attempt_separately():
    attempts = []

    async def slow_then_fast(_):
        attempts.append(1)
        if len(attempts) == 1:
            await asyncio.sleep(0.2)
        return {"attempts": len(attempts)}

    result = await run("""
functions: [{name: f, type: custom, operation: f}]
errors: [{name: slow, code: timeout}]
retries: [{name: r, maxAttempts: 2, delay: PT1S}]
states:
- name: s
  type: operation
  timeouts: {actionExecTimeout: PT0.05S}
  actions: [{functionRef: f, retryRef: r}]
  end: true
""", {}, functions={"f": slow_then_fast})
    assert result.output == {"attempts": 2}


async def test_continuations_get_their_own_step_names():
    port = RecordingPort()
    compiled = plan("""
id: again
functions: [{name: f, type: custom, operation: f}]
states:
- name: s
  type: operation
  actions: [{functionRef: f}]
  end: {continueAs: {workflowId: again, data: "${ {n: (.n + 1)} }"}}
""")
    calls = []

    def f(arguments):
        calls.append(arguments["n"])
        if arguments["n"] >= 2:
            raise RuntimeError("stop here")
        return None

    result = await execute(compiled, {"n": 0}, port=port, context=ExecutionContext(functions={"f": f}))
    assert calls == [0, 1, 2] and result.status == "failed"
    assert [c[1] for c in port.calls if c[0] == "step"] == ["1:s/0:f#1", "+1/1:s/0:f#1", "+2/1:s/0:f#1"]
