"""Replays decide the same: random workflows, run twice on a recording port, make the same port
calls in the same order with the same step names and reach the same output."""

import asyncio

from hypothesis import given, settings, strategies as st

from xflow_runtime.interpreter import ExecutionContext, execute
from xflow_runtime.plan import compile_plan

from tests.interpreter.test_port_contract import RecordingPort


def _state(kind: str, index: int, last: bool) -> dict:
    name, following = f"s{index}", ({"end": True} if last else {"transition": f"s{index + 1}"})
    if kind == "inject":
        return {"name": name, "type": "inject", "data": {f"k{index}": index}, **following}
    if kind == "operation":
        return {"name": name, "type": "operation", "actionMode": "parallel",
                "actions": [{"functionRef": {"refName": "f", "arguments": {"i": index}}},
                            {"functionRef": "inc", "actionDataFilter": {"toStateData": ".n"}}], **following}
    if kind == "foreach":
        return {"name": name, "type": "foreach", "inputCollection": "${ [range(3)] }", "iterationParam": "x",
                "outputCollection": f".out{index}",
                "actions": [{"functionRef": {"refName": "f", "arguments": {"x": "${ .x }"}}}], **following}
    if kind == "parallel":
        return {"name": name, "type": "parallel", "branches": [
            {"name": f"b{j}", "actions": [{"functionRef": {"refName": "f", "arguments": {"b": j}},
                                           "sleep": {"before": f"PT{j + 1}S"}}]} for j in range(3)],
                **following}
    if kind == "sleep":
        return {"name": name, "type": "sleep", "duration": "PT1M", **following}
    return {"name": name, "type": "switch",
            "dataConditions": [{"condition": "${ .n > 100 }", "end": True}],
            "defaultCondition": following if not last else {"end": True}}


KINDS = st.sampled_from(["inject", "operation", "foreach", "parallel", "sleep", "switch"])


async def _run_once(document: dict):
    port = RecordingPort()

    async def f(arguments):
        await asyncio.sleep(0)
        return {f"r{sorted(arguments.items())}": True}

    context = ExecutionContext(functions={"f": f}, instance_id="i")
    result = await execute(compile_plan(document), {"n": 0}, port=port, context=context)
    return result.output, port.calls


@settings(max_examples=40, deadline=None)
@given(st.lists(KINDS, min_size=1, max_size=6))
def test_same_workflow_same_port_calls_and_output(kinds):
    document = {
        "id": "random", "specVersion": "0.8",
        "functions": [{"name": "f", "type": "custom", "operation": "f"},
                      {"name": "inc", "type": "expression", "operation": ".n + 1"}],
        "states": [_state(kind, i, i == len(kinds) - 1) for i, kind in enumerate(kinds)],
    }
    first = asyncio.run(_run_once(document))
    second = asyncio.run(_run_once(document))
    assert first == second
    step_names = [call[1] for call in first[1] if call[0] == "step"]
    assert len(step_names) == len(set(step_names))  # every effect has its own name
