"""Event states, event switch, callback, correlation, produced events, eventRef actions."""

from tests.interpreter.support import event, run

EVENTS = """
events:
- {name: A, type: a.type, source: src}
- {name: B, type: b.type, source: src}
- {name: Out, type: out.type, kind: produced}
"""


async def test_exclusive_event_state_runs_only_the_matching_entry():
    calls = []
    result = await run(EVENTS + """
functions: [{name: f, type: custom, operation: f}]
states:
- name: wait
  type: event
  onEvents:
  - {eventRefs: [A], actions: [{name: onA, functionRef: {refName: f, arguments: {which: a}}}]}
  - {eventRefs: [B], actions: [{name: onB, functionRef: {refName: f, arguments: {which: b}}}]}
  end: true
""", {}, events=[event("b.type", "src", {"b": 1}), event("a.type", "src", {"a": 1})],
        functions={"f": lambda args: calls.append(args["which"]) or {"ran": args["which"]}})
    assert calls == ["b"]
    assert result.output == {"b": 1, "ran": "b"}


async def test_non_exclusive_waits_for_all_events_with_correlation():
    calls = []
    result = await run("""
events:
- {name: App, type: application, source: college, correlation: [{contextAttributeName: applicantId}]}
- {name: Sat, type: satscores, source: college, correlation: [{contextAttributeName: applicantId}]}
functions: [{name: finalize, type: custom, operation: f}]
states:
- name: finalize
  type: event
  exclusive: false
  onEvents:
  - eventRefs: [App, Sat]
    actions: [{functionRef: finalize}]
  end: true
""", {}, events=[
        event("application", "college", {"app": 1}, applicantId="id1"),
        event("satscores", "college", {"sat": "other"}, applicantId="id2"),  # another applicant: ignored
        event("satscores", "college", {"sat": 1500}, applicantId="id1"),
    ], functions={"finalize": lambda args: calls.append(dict(args)) or None})
    assert calls == [{"app": 1, "sat": 1500}]
    assert result.output == {"app": 1, "sat": 1500}


async def test_correlation_with_a_literal_value_filters_events():
    result = await run("""
events:
- {name: E, type: t, source: s, correlation: [{contextAttributeName: region, contextAttributeValue: eu}]}
states:
- {name: wait, type: event, onEvents: [{eventRefs: [E]}], end: true}
""", {}, events=[event("t", "s", {"r": "us"}, region="us"), event("t", "s", {"r": "eu"}, region="eu")])
    assert result.output == {"r": "eu"}


async def test_data_only_false_exposes_the_envelope_to_filters():
    result = await run("""
events: [{name: E, type: t, source: s, dataOnly: false}]
states:
- name: wait
  type: event
  onEvents: [{eventRefs: [E], eventDataFilter: {data: "${ {patient: .patientId, payload: .data} }"}}]
  end: true
""", {}, events=[event("t", "s", {"bpm": 80}, patientId="p1")])
    assert result.output == {"patient": "p1", "payload": {"bpm": 80}}


async def test_event_timeout_moves_on_without_running_actions():
    calls = []
    result = await run(EVENTS + """
functions: [{name: f, type: custom, operation: f}]
states:
- {name: first, type: inject, data: {x: 1}, transition: wait}
- name: wait
  type: event
  timeouts: {eventTimeout: PT5M}
  onEvents: [{eventRefs: [A], actions: [{functionRef: f}]}]
  transition: after
- {name: after, type: inject, data: {after: true}, end: true}
""", {}, functions={"f": lambda _: calls.append(1)})
    assert calls == [] and result.output == {"x": 1, "after": True}


async def test_use_data_false_merges_nothing():
    result = await run(EVENTS + """
states:
- {name: wait, type: event, onEvents: [{eventRefs: [A], eventDataFilter: {useData: false}}], end: true}
""", {"keep": 1}, events=[event("a.type", "src", {"a": 1})])
    assert result.output == {"keep": 1}


EVENT_SWITCH = EVENTS + """
states:
- {name: start, type: inject, data: {}, transition: decide}
- name: decide
  type: switch
  timeouts: {eventTimeout: PT1H}
  eventConditions:
  - {eventRef: A, transition: gotA, eventDataFilter: {toStateData: .fromA}}
  - {eventRef: B, transition: gotB}
  defaultCondition: {transition: none}
- {name: gotA, type: inject, data: {route: A}, end: true}
- {name: gotB, type: inject, data: {route: B}, end: true}
- {name: none, type: inject, data: {route: default}, end: true}
"""


async def test_event_switch_takes_the_first_arriving_event_and_its_filter():
    result = await run(EVENT_SWITCH, {}, events=[event("a.type", "src", {"v": 1}), event("b.type", "src", {})])
    assert result.output == {"fromA": {"v": 1}, "route": "A"}


async def test_event_switch_timeout_takes_the_default():
    assert (await run(EVENT_SWITCH, {})).output == {"route": "default"}


async def test_callback_runs_the_action_then_merges_the_callback_event():
    result = await run("""
events: [{name: Done, type: credit.done, source: credit}]
functions: [{name: start, type: custom, operation: start}]
states:
- name: check
  type: callback
  action: {functionRef: start}
  eventRef: Done
  eventDataFilter: {toStateData: .decision}
  end: true
""", {"customer": 1}, functions={"start": lambda _: {"requested": True}},
        events=[event("credit.done", "credit", {"approved": True})])
    assert result.output == {"customer": 1, "requested": True, "decision": {"approved": True}}


async def test_produce_events_on_end_use_the_filtered_output():
    sink = []
    result = await run(EVENTS + """
states:
- name: s
  type: inject
  data: {orders: [1, 2]}
  stateDataFilter: {output: "${ {provisioned: .orders} }"}
  end:
    produceEvents: [{eventRef: Out, data: "${ .provisioned }", contextAttributes: {tenant: acme}}]
""", {}, event_sink=sink.append)
    assert [e["data"] for e in result.produced_events] == [[1, 2]]
    produced = sink[0]
    assert produced["type"] == "out.type" and produced["tenant"] == "acme" and produced["specversion"] == "1.0"
    assert produced["source"] == "/xflow/test" and produced["id"]


async def test_event_ref_action_emits_the_trigger_and_returns_the_result_event():
    result = await run("""
events:
- {name: Ask, type: vet.ask, kind: produced}
- {name: Answer, type: vet.answer, source: vet}
states:
- name: book
  type: operation
  actions:
  - eventRef: {triggerEventRef: Ask, resultEventRef: Answer, data: "${ .patient }"}
    actionDataFilter: {results: "${ .appointment }", toStateData: .appointment}
  end: true
""", {"patient": {"name": "Rex"}}, events=[event("vet.answer", "vet", {"appointment": {"at": "noon"}})])
    assert result.output == {"patient": {"name": "Rex"}, "appointment": {"at": "noon"}}
    assert result.produced_events[0]["data"] == {"name": "Rex"}


async def test_event_ref_result_timeout_is_a_timeout_error():
    result = await run("""
events:
- {name: Ask, type: vet.ask, kind: produced}
- {name: Answer, type: vet.answer, source: vet}
states:
- name: book
  type: operation
  actions: [{eventRef: {triggerEventRef: Ask, resultEventRef: Answer, resultEventTimeout: PT1M}}]
  end: true
""", {})
    assert result.status == "failed" and result.error["code"] == "timeout"


async def test_events_arriving_before_their_state_are_kept():
    result = await run(EVENTS + """
states:
- {name: first, type: event, onEvents: [{eventRefs: [A]}], transition: second}
- {name: second, type: event, onEvents: [{eventRefs: [B]}], end: true}
""", {}, events=[event("b.type", "src", {"b": 1}), event("a.type", "src", {"a": 1})])
    assert result.output == {"a": 1, "b": 1}


async def test_async_event_ref_emits_the_trigger_in_order_without_waiting():
    sink = []
    result = await run("""
events:
- {name: Ask, type: ask, kind: produced}
- {name: Answer, type: answer, source: s}
- {name: After, type: after, kind: produced}
states:
- name: s
  type: operation
  actions: [{eventRef: {triggerEventRef: Ask, resultEventRef: Answer, invoke: async, data: {q: 1}}}]
  end: {produceEvents: [{eventRef: After}]}
""", {"x": 1}, event_sink=sink.append)
    assert result.output == {"x": 1}
    assert [e["type"] for e in result.produced_events] == ["ask", "after"] == [e["type"] for e in sink]


async def test_concurrent_waits_each_get_their_own_result_event():
    result = await run("""
events:
- {name: AskA, type: ask.a, kind: produced}
- {name: AskB, type: ask.b, kind: produced}
- {name: A, type: answer.a, source: s}
- {name: B, type: answer.b, source: s}
states:
- name: both
  type: parallel
  branches:
  - {name: a, actions: [{eventRef: {triggerEventRef: AskA, resultEventRef: A}, actionDataFilter: {toStateData: .a}}]}
  - {name: b, actions: [{eventRef: {triggerEventRef: AskB, resultEventRef: B}, actionDataFilter: {toStateData: .b}}]}
  end: true
""", {}, events=[event("answer.b", "s", {"for": "b"}), event("answer.a", "s", {"for": "a"})])
    assert result.output == {"a": {"for": "a"}, "b": {"for": "b"}}


async def test_concurrent_waits_with_events_arriving_later_through_the_engine():
    from xflow_runtime.engine.inprocess import InProcessEngine
    from xflow_runtime.interpreter import ExecutionContext, execute
    from tests.interpreter.support import plan

    compiled = plan("""
events:
- {name: AskA, type: ask.a, kind: produced}
- {name: AskB, type: ask.b, kind: produced}
- {name: A, type: answer.a, source: s}
- {name: B, type: answer.b, source: s}
states:
- name: both
  type: parallel
  branches:
  - {name: a, actions: [{eventRef: {triggerEventRef: AskA, resultEventRef: A}, actionDataFilter: {toStateData: .a}}]}
  - {name: b, actions: [{eventRef: {triggerEventRef: AskB, resultEventRef: B}, actionDataFilter: {toStateData: .b}}]}
  end: true
""")
    engine = InProcessEngine()

    def reply(produced):  # answer each question as it is asked, B's answer first
        answer = {"ask.a": "answer.a", "ask.b": "answer.b"}[produced["type"]]
        import asyncio

        asyncio.get_running_loop().call_later(0.01 if answer == "answer.a" else 0.001,
                                              engine.send_event, event(answer, "s", {"for": answer}))

    result = await execute(compiled, {}, port=engine, context=ExecutionContext(event_sink=reply))
    assert result.output == {"a": {"for": "answer.a"}, "b": {"for": "answer.b"}}


async def test_produced_events_carry_the_bound_correlation_value():
    result = await run("""
events:
- {name: Order, type: order, source: shop, correlation: [{contextAttributeName: orderid}]}
- {name: Shipped, type: shipped, kind: produced, correlation: [{contextAttributeName: orderid}]}
states:
- {name: wait, type: event, onEvents: [{eventRefs: [Order]}], end: {produceEvents: [{eventRef: Shipped}]}}
""", {}, events=[event("order", "shop", {"item": 1}, orderid="o-7")])
    assert result.produced_events[0]["orderid"] == "o-7"


NON_EXCLUSIVE_START = """
events:
- {name: A, type: a.type, source: src}
- {name: B, type: b.type, source: src}
functions: [{name: f, type: custom, operation: f}]
states:
- {name: first, type: event, exclusive: false, timeouts: {eventTimeout: PT1H},
   onEvents: [{eventRefs: [A, B], actions: [{functionRef: f}]}], end: true}
"""


def _gap_scenario(gap_seconds: float):
    """Run NON_EXCLUSIVE_START on a virtual clock; A arrives after 3 h, B ``gap_seconds`` later."""
    import asyncio

    from xflow_runtime.engine.clock import VirtualClockLoop
    from xflow_runtime.engine.inprocess import InProcessEngine
    from xflow_runtime.interpreter import ExecutionContext, execute
    from tests.interpreter.support import plan

    engine, calls = InProcessEngine(), []

    async def deliver():
        await asyncio.sleep(3 * 3600)  # the first event has no time limit
        engine.send_event(event("a.type", "src", {"a": 1}))
        await asyncio.sleep(gap_seconds)
        engine.send_event(event("b.type", "src", {"b": 1}))

    async def scenario():
        feeder = asyncio.ensure_future(deliver())
        context = ExecutionContext(functions={"f": lambda args: calls.append(args)})
        result = await execute(plan(NON_EXCLUSIVE_START), {}, port=engine, context=context)
        feeder.cancel()
        return result

    loop = VirtualClockLoop()
    try:
        return loop.run_until_complete(scenario()), calls
    finally:
        loop.close()


async def test_non_exclusive_start_state_times_the_gap_between_events():
    import asyncio

    within_gap, calls = await asyncio.to_thread(_gap_scenario, 1800)
    assert within_gap.output == {"a": 1, "b": 1} and calls == [{"a": 1, "b": 1}]
    too_late, calls = await asyncio.to_thread(_gap_scenario, 7200)
    assert calls == [] and too_late.output == {}


async def test_an_event_buffered_while_a_waiter_reads_the_clock_still_wakes_it():
    """A durable engine's clock reading is a recorded step, so the waiter yields while reading it;
    an event the inbox buffers meanwhile must not be missed (it was, once: the second state then
    sat out its whole eventTimeout)."""
    import asyncio

    from xflow_runtime.engine.inprocess import InProcessEngine
    from xflow_runtime.interpreter import ExecutionContext, execute
    from tests.interpreter.support import plan

    class YieldingClock(InProcessEngine):
        async def now(self) -> float:
            for _ in range(3):
                await asyncio.sleep(0)
            return await super().now()

        async def wait_event(self, topic, timeout):
            await asyncio.sleep(0)
            return await super().wait_event(topic, timeout)

    compiled = plan("""
events:
- {name: Step, type: step, source: s}
states:
- {name: First, type: event, onEvents: [{eventRefs: [Step], eventDataFilter: {toStateData: .first}}],
   timeouts: {eventTimeout: PT30S}, transition: Second}
- {name: Second, type: event, onEvents: [{eventRefs: [Step], eventDataFilter: {toStateData: .second}}],
   timeouts: {eventTimeout: PT30S}, end: true}
""")
    for delays in ([0, spins] for spins in range(40)):  # one of them lands in the clock reading
        engine = YieldingClock()

        async def deliver(n: int, spins: int) -> None:
            for _ in range(spins):
                await asyncio.sleep(0)
            engine.send_event(event("step", "s", {"n": n}))

        senders = [asyncio.ensure_future(deliver(n, spins)) for n, spins in zip((1, 2), delays)]
        result = await asyncio.wait_for(execute(compiled, {}, port=engine, context=ExecutionContext()), 2)
        await asyncio.gather(*senders)
        assert result.output == {"first": {"n": 1}, "second": {"n": 2}}, delays
