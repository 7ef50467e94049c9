"""One argument rule for every way a Python function is provided (specs/functions.md §3): the
same callable gets the same call from ``run_workflow(functions=…)`` (the interpreter's table) and
from ``Runtime(functions=…)`` (the registry behind ``invoke_function``)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from xflow_runtime import Runtime
from xflow_runtime.engine.inprocess import run_workflow
from xflow_runtime.errors import WorkflowFailed
from xflow_runtime.plan import compile_plan


def whole(data):  # one positional parameter: the arguments whole
    return {"got": data}


def spread(**members):  # **kwargs: the members as keywords
    return {"got": members}


def named(*, amount, note="-"):  # keyword-only
    return {"got": [amount, note]}


def plan_calling(arguments: Any):
    return compile_plan({"id": "c", "specVersion": "0.8", "start": "s",
                         "functions": [{"name": "f", "type": "custom", "operation": "local"}],
                         "states": [{"name": "s", "type": "operation", "end": True, "actions": [
                             {"functionRef": {"refName": "f", "arguments": arguments},
                              "actionDataFilter": {"toStateData": ".out"}}]}]})


async def both_ways(function, arguments: Any) -> tuple[Any, Any]:
    plan = plan_calling(arguments)
    direct = await run_workflow(plan, {}, functions={"f": function}, virtual_time=False)
    async with Runtime("inprocess", functions={"f": function}) as runtime:
        handle = await runtime.start(plan, {})
        try:
            through_registry = {"status": "completed", "output": await handle.result()}
        except WorkflowFailed as failed:
            through_registry = {"status": "failed", "code": failed.error.get("code")}
    first = {"status": direct.status, "output": direct.output} if direct.status == "completed" else {
        "status": "failed", "code": (direct.error or {}).get("code")}
    return first, through_registry


keys = st.text(alphabet="ab-c_ 1", min_size=1, max_size=4)
values = st.one_of(st.integers(-5, 5), st.text(max_size=3), st.booleans())
objects = st.dictionaries(keys, values, max_size=3)


@settings(max_examples=25, deadline=None)
@given(objects)
async def test_the_argument_rule_is_the_same_for_run_workflow_and_runtime(arguments) -> None:
    for function, expected in ((whole, {"got": arguments}), (spread, {"got": arguments})):
        first, second = await both_ways(function, arguments)
        assert first == second == {"status": "completed", "output": {"out": expected}}


async def test_keyword_only_parameters_take_members_by_name_in_both_paths() -> None:
    first, second = await both_ways(named, {"amount": 3})
    assert first == second == {"status": "completed", "output": {"out": {"got": [3, "-"]}}}
    first, second = await both_ways(named, {"amount": 3, "other": 1})
    assert first["status"] == second["status"] == "failed" and first["code"] == second["code"] == "TypeError"
