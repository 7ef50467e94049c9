"""Parallel, foreach, compensation, end/terminate, continueAs, subflows, dataInputSchema."""

import asyncio

from tests.interpreter.support import History, plan, run

BRANCHES = """
functions: [{name: f, type: custom, operation: f}]
states:
- name: par
  type: parallel
  %s
  branches:
  - {name: b1, actions: [{functionRef: {refName: f, arguments: {b: 1}}}]}
  - {name: b2, actions: [{functionRef: {refName: f, arguments: {b: 2}}}]}
  - {name: b3, actions: [{functionRef: {refName: f, arguments: {b: 3}}}]}
  end: true
"""


async def _branch_result(args):
    await asyncio.sleep(0.001 * (4 - args["b"]))  # b3 finishes first
    return {"last": args["b"], f"b{args['b']}": True, "list": [args["b"]]}


async def test_parallel_all_of_joins_in_branch_order():
    result = await run(BRANCHES % "", {"list": [0]}, functions={"f": _branch_result})
    assert result.output == {"list": [0, 1, 2, 3], "last": 3, "b1": True, "b2": True, "b3": True}


async def test_parallel_at_least_keeps_the_first_finishers_and_cancels_the_rest():
    started, finished = [], []

    async def branch(args):
        started.append(args["b"])
        await asyncio.sleep({1: 0.2, 2: 0.001, 3: 0.002}[args["b"]])
        finished.append(args["b"])
        return {f"b{args['b']}": True}

    result = await run(BRANCHES % "completionType: atLeast\n  numCompleted: 2", {}, functions={"f": branch})
    assert result.output == {"b2": True, "b3": True}
    assert sorted(started) == [1, 2, 3] and 1 not in finished


async def test_branch_failure_goes_to_the_parallel_state_on_errors():
    def branch(args):
        if args["b"] == 2:
            raise ValueError("branch two broke")
        return {}

    result = await run((BRANCHES % "onErrors: [{errorRef: broke, transition: recover}]")
                       + "- {name: recover, type: inject, data: {recovered: true}, end: true}\n"
                       + "errors: [{name: broke, code: ValueError}]\n", {}, functions={"f": branch})
    assert result.output == {"recovered": True}


async def test_foreach_sequential_mode_and_iteration_sees_state_data():
    order = []
    result = await run("""
functions: [{name: f, type: custom, operation: f}]
states:
- name: each
  type: foreach
  mode: sequential
  inputCollection: .items
  iterationParam: it
  outputCollection: .out
  actions: [{functionRef: {refName: f, arguments: {it: "${ .it }", prefix: "${ .prefix }"}}}]
  end: true
""", {"items": ["a", "b", "c"], "prefix": "p-", "out": ["existing"]},
        functions={"f": lambda args: order.append(args["it"]) or args["prefix"] + args["it"]})
    assert order == ["a", "b", "c"]
    assert result.output["out"] == ["existing", "p-a", "p-b", "p-c"]
    assert "it" not in result.output  # iterations never change the outer data directly


async def test_foreach_batch_size_caps_concurrency():
    running, peak = [0], [0]

    async def work(args):
        running[0] += 1
        peak[0] = max(peak[0], running[0])
        await asyncio.sleep(0.001)
        running[0] -= 1
        return args["it"]

    result = await run("""
functions: [{name: f, type: custom, operation: f}]
states:
- name: each
  type: foreach
  inputCollection: "${ [range(7)] }"
  iterationParam: it
  batchSize: 2
  outputCollection: .out
  actions: [{functionRef: {refName: f, arguments: {it: "${ .it }"}}}]
  end: true
""", {}, functions={"f": work})
    assert result.output["out"] == list(range(7)) and peak[0] == 2


async def test_foreach_iteration_result_honours_to_state_data_and_keeps_duplicates():
    result = await run("""
functions: [{name: f, type: custom, operation: f}]
states:
- name: each
  type: foreach
  inputCollection: .items
  outputCollection: .out
  actions: [{functionRef: f, actionDataFilter: {toStateData: .value}}]
  end: true
""", {"items": [1, 1]}, functions={"f": lambda args: "same"})
    assert result.output["out"] == [{"value": "same"}, {"value": "same"}]


COMPENSATION = """
functions: [{name: f, type: custom, operation: f}]
states:
- {name: A, type: inject, data: {}, transition: B}
- {name: B, type: inject, data: {}, compensatedBy: B1, transition: C}
- {name: C, type: inject, data: {}, transition: D}
- {name: D, type: inject, data: {}, compensatedBy: D1, transition: E}
- {name: E, type: inject, data: {}, end: {compensate: true, produceEvents: [{eventRef: done}]}}
- {name: B1, type: operation, usedForCompensation: true, actions: [{functionRef: {refName: f, arguments: {s: B1}}}], transition: B2}
- {name: B2, type: operation, usedForCompensation: true, actions: [{functionRef: {refName: f, arguments: {s: B2}}}], end: true}
- {name: D1, type: operation, usedForCompensation: true, actions: [{functionRef: {refName: f, arguments: {s: D1}}}], end: true}
events: [{name: done, type: done, kind: produced}]
"""


async def test_compensation_runs_in_reverse_completion_order_threading_data():
    calls = []
    result = await run(COMPENSATION, {}, functions={"f": lambda args: calls.append(args["s"]) or {"trail": [args["s"]]}})
    assert calls == ["D1", "B1", "B2"]
    assert result.output == {"trail": ["D1", "B1", "B2"]}
    # produceEvents happen after compensation, on the compensated data
    assert result.produced_events[0]["data"] == {"trail": ["D1", "B1", "B2"]}


async def test_continue_as_starts_the_workflow_again_with_new_data():
    result = await run("""
id: counter
states:
- name: check
  type: switch
  dataConditions:
  - condition: "${ .n < 3 }"
    end: {continueAs: {workflowId: counter, data: "${ {n: (.n + 1)} }"}}
  defaultCondition: {end: true}
""", {"n": 0})
    assert result.output == {"n": 3}


async def test_sync_subflow_gets_action_input_and_its_output_is_the_result():
    child = plan("""
id: child
version: '2.0'
states: [{name: c, type: inject, data: {child: true}, stateDataFilter: {output: "${ {seen: .x, child: .child} }"}, end: true}]
""")
    result = await run("""
states:
- name: call
  type: operation
  actions: [{subFlowRef: {workflowId: child, version: '2.0'}, actionDataFilter: {fromStateData: "${ {x: .value} }", toStateData: .sub}}]
  end: true
""", {"value": 7}, workflows=[child])
    assert result.output == {"value": 7, "sub": {"seen": 7, "child": True}}


async def test_subflow_version_must_match_and_missing_subflow_is_an_error():
    child = plan("id: child\nversion: '1.0'\nstates: [{name: c, type: inject, data: {}, end: true}]")
    result = await run("""
states: [{name: call, type: operation, actions: [{subFlowRef: {workflowId: child, version: '2.0'}}], end: true}]
""", {}, workflows=[child])
    assert result.status == "failed" and result.error["code"] == "subflowNotFound"


async def test_subflow_failure_reaches_the_parent_on_errors():
    child = plan("""
id: child
functions: [{name: boom, type: custom, operation: boom}]
states: [{name: c, type: operation, actions: [{functionRef: boom}], end: true}]
""")
    result = await run("""
errors: [{name: childFailed, code: KeyError}]
states:
- {name: call, type: operation, actions: [{subFlowRef: child}], onErrors: [{errorRef: childFailed, transition: r}], end: true}
- {name: r, type: inject, data: {recovered: true}, end: true}
""", {}, workflows=[child], functions={"boom": lambda _: {}["missing"]})
    assert result.output == {"recovered": True}


async def test_async_subflow_with_continue_finishes_after_the_parent():
    calls = []
    child = plan("""
id: onboard
functions: [{name: f, type: custom, operation: f}]
states: [{name: c, type: sleep, duration: PT1H, transition: d}, {name: d, type: operation, actions: [{functionRef: f}], end: true}]
""")
    result = await run("""
states:
- name: call
  type: operation
  actions: [{subFlowRef: {workflowId: onboard, invoke: async, onParentComplete: continue}}]
  end: true
""", {"customer": 1}, workflows=[child], functions={"f": lambda args: calls.append(args)})
    assert result.output == {"customer": 1}
    assert calls == [{"customer": 1}]


async def test_async_subflow_with_terminate_is_cancelled_with_the_parent():
    calls = []
    child = plan("""
id: onboard
functions: [{name: f, type: custom, operation: f}]
states: [{name: c, type: sleep, duration: PT1H, transition: d}, {name: d, type: operation, actions: [{functionRef: f}], end: true}]
""")
    result = await run("""
states:
- {name: call, type: operation, actions: [{subFlowRef: {workflowId: onboard, invoke: async}}], end: true}
""", {}, workflows=[child], functions={"f": lambda args: calls.append(args)})
    assert result.ok and calls == []


async def test_data_input_schema_rejects_bad_input_before_the_first_state(tmp_path):
    import json

    (tmp_path / "schema.json").write_text(json.dumps({"type": "object", "required": ["name"]}))
    history = History()
    document = f"""
dataInputSchema: {{schema: "{tmp_path / 'schema.json'}", failOnValidationErrors: %s}}
states: [{{name: s, type: inject, data: {{ok: true}}, end: true}}]
"""
    failed = await run(document % "true", {"other": 1}, observer=history)
    assert failed.status == "failed" and failed.error["code"] == "validation"
    assert history.states() == []
    lenient = await run(document % "false", {"other": 1})
    assert lenient.output == {"other": 1, "ok": True}


async def test_workflow_variable_and_version_expression():
    result = await run("""
id: wf
name: My flow
version: "${ .inputVersion }"
states: [{name: s, type: inject, data: {}, stateDataFilter: {output: "${ {v: $WORKFLOW.version, id: $WORKFLOW.id} }"}, end: true}]
""", {"inputVersion": "1.0.0"})
    assert result.output == {"v": "1.0.0", "id": "wf"}


async def test_only_declared_secrets_are_visible_to_expressions():
    history = History()
    result = await run("""
secrets: [TOKEN, ABSENT]
states: [{name: s, type: inject, data: {}, stateDataFilter: {output: "${ {t: $SECRETS.TOKEN, all: $SECRETS} }"}, end: true}]
""", {}, secrets={"TOKEN": "abc", "OTHER": "not declared"}, observer=history)
    assert result.output == {"t": "abc", "all": {"TOKEN": "abc"}}
    assert history.of("secrets_missing")[0]["names"] == ["ABSENT"]


async def test_observer_records_state_inputs_outputs_and_completion():
    history = History()
    await run("""
states:
- {name: one, type: inject, data: {a: 1}, transition: two}
- {name: two, type: inject, data: {b: 2}, end: true}
""", {}, observer=history)
    kinds = [r["event"] for r in history]
    assert kinds == ["workflow_started", "state_entered", "state_exited", "state_entered", "state_exited",
                     "workflow_completed"]
    assert history.of("state_exited")[0]["next"] == "two"
    assert history.of("state_exited")[1]["output"] == {"a": 1, "b": 2}


KEEP_ACTIVE = """
keepActive: true
timeouts: {workflowExecTimeout: {duration: PT1H, runBefore: wrapUp}}
states:
- {name: s, type: inject, data: {done: true}, end: %s}
- {name: wrapUp, type: inject, data: {wrapped: true}, usedForCompensation: true, end: true}
"""


async def test_keep_active_stays_until_the_deadline_then_completes_after_run_before():
    history = History()
    result = await run(KEEP_ACTIVE % "true", {}, observer=history)
    assert result.status == "completed" and result.output == {"done": True, "wrapped": True}
    assert history.states() == ["s", "wrapUp"]


async def test_keep_active_ends_at_once_on_terminate():
    result = await run(KEEP_ACTIVE % "{terminate: true}", {})
    assert result.output == {"done": True}


async def test_keep_active_without_a_deadline_completes_at_the_end():
    result = await run("keepActive: true\nstates: [{name: s, type: inject, data: {a: 1}, end: true}]", {})
    assert result.output == {"a": 1}


async def test_failures_outside_states_are_reported_not_raised():
    bad_event = await run("""
events: [{name: out, type: out, kind: produced}]
states: [{name: s, type: inject, data: {}, end: {produceEvents: [{eventRef: out, data: "${ .a.b.c | tonumber }"}]}}]
""", {"a": {"b": {"c": "not a number"}}})
    assert bad_event.status == "failed" and bad_event.error["code"] == "ExpressionError"
    bad_continue = await run("""
id: again
states: [{name: s, type: inject, data: {}, end: {continueAs: {workflowId: again, data: "${ error(\\"no\\") }"}}}]
""", {})
    assert bad_continue.status == "failed" and "no" in bad_continue.error["message"]


async def test_foreach_over_an_empty_array_creates_an_empty_output_collection():
    result = await run("""
functions: [{name: f, type: custom, operation: f}]
states:
- {name: each, type: foreach, inputCollection: .items, outputCollection: .out, actions: [{functionRef: f}], end: true}
""", {"items": []}, functions={"f": lambda _: 1})
    assert result.output == {"items": [], "out": []}


async def test_raise_for_error_returns_output_or_raises_workflow_failed():
    import pytest

    from xflow_runtime.errors import WorkflowFailed

    ok = await run("states: [{name: s, type: inject, data: {a: 1}, end: true}]", {})
    assert ok.raise_for_error() == {"a": 1}
    failed = await run("states: [{name: s, type: inject, data: {}, stateDataFilter: {output: '.a.b'}, end: true}]",
                       {"a": "text"})
    with pytest.raises(WorkflowFailed, match="Cannot index string"):
        failed.raise_for_error()


async def test_continue_as_an_unknown_workflow_fails_clearly():
    result = await run("states: [{name: s, type: inject, data: {}, end: {continueAs: elsewhere}}]", {})
    assert result.status == "failed" and result.error["code"] == "subflowNotFound"
    assert "elsewhere" in result.error["message"]
