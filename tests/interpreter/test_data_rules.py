"""Pinned data decisions: filters, merge at the root, toStateData paths, input rules."""

import asyncio

from hypothesis import given, settings, strategies as st

from xflow_runtime.interpreter.data import merge_into
from xflow_runtime.expressions import compile_expression

from tests.interpreter.support import run

ONE_CALL = """
functions: [{name: f, type: custom, operation: f}]
states:
- name: s
  type: operation
  actions: [{name: %s, functionRef: f %s}]
  end: true
"""


async def test_non_object_result_at_object_root_goes_under_action_name_output():
    result = await run(ONE_CALL % ("greet", ""), {"a": 1}, functions={"f": lambda _: "hi"})
    assert result.output == {"a": 1, "greet-output": "hi"}


async def test_unnamed_action_uses_the_function_name_for_the_output_key():
    result = await run("""
functions: [{name: f, type: custom, operation: f}]
states: [{name: s, type: operation, actions: [{functionRef: f}], end: true}]
""", {}, functions={"f": lambda _: [1, 2]})
    assert result.output == {"f-output": [1, 2]}


async def test_null_result_leaves_state_data_unchanged():
    result = await run(ONE_CALL % ("n", ""), {"a": 1}, functions={"f": lambda _: None})
    assert result.output == {"a": 1}


async def test_object_result_deep_merges_and_arrays_concatenate():
    result = await run(ONE_CALL % ("m", ""), {"c": {"x": 1, "tags": ["a"]}},
                       functions={"f": lambda _: {"c": {"y": 2, "tags": ["b", "a"]}}})
    assert result.output == {"c": {"x": 1, "y": 2, "tags": ["a", "b"]}}


async def test_use_results_false_merges_nothing():
    result = await run(ONE_CALL % ("m", ", actionDataFilter: {useResults: false}"), {"a": 1},
                       functions={"f": lambda _: {"b": 2}})
    assert result.output == {"a": 1}


async def test_function_without_arguments_receives_the_action_input():
    seen = []
    await run(ONE_CALL % ("m", ", actionDataFilter: {fromStateData: '${ .inner }'}"), {"inner": {"k": 1}, "o": 2},
              functions={"f": lambda args: seen.append(args)})
    assert seen == [{"k": 1}]


async def test_literal_arguments_stay_literal_and_only_whole_expressions_evaluate():
    seen = []
    await run("""
functions: [{name: f, type: custom, operation: f}]
states:
- name: s
  type: operation
  actions:
  - functionRef:
      refName: f
      arguments: {plain: ".name", embedded: "Hi ${ .name }", expr: " ${ .name } ", nested: {list: [1, "${ .n }"]}}
  end: true
""", {"name": "Ann", "n": 3}, functions={"f": lambda args: seen.append(args)})
    assert seen == [{"plain": ".name", "embedded": "Hi ${ .name }", "expr": "Ann", "nested": {"list": [1, 3]}}]


async def test_present_filter_yielding_null_is_used_as_is():
    result = await run("""
states: [{name: s, type: inject, data: {}, stateDataFilter: {output: .missing}, end: true}]
""", {"a": 1})
    assert result.status == "completed" and result.output is None


async def test_several_filter_outputs_fail_with_a_clear_message():
    result = await run("""
states: [{name: s, type: inject, data: {}, stateDataFilter: {output: ".xs[]"}, end: true}]
""", {"xs": [1, 2]})
    assert result.status == "failed"
    assert "wrap it in [ ]" in result.error["message"] and result.error["code"] == "ExpressionError"


async def test_input_must_be_an_object_and_none_means_empty():
    assert (await run("states: [{name: s, type: inject, data: {a: 1}, end: true}]", None)).output == {"a": 1}
    bad = await run("states: [{name: s, type: inject, data: {a: 1}, end: true}]", [1])
    assert bad.status == "failed" and bad.error["code"] == "invalidInput"


async def test_to_state_data_merges_into_existing_value_at_a_nested_path():
    result = await run(ONE_CALL % ("m", ", actionDataFilter: {toStateData: .a.b}"), {"a": {"b": {"keep": 1}}},
                       functions={"f": lambda _: {"new": 2}})
    assert result.output == {"a": {"b": {"keep": 1, "new": 2}}}


async def test_scalar_results_append_to_an_array_status_list():
    result = await run(ONE_CALL % ("m", ", actionDataFilter: {toStateData: .status}"), {"status": ["Order Submitted"]},
                       functions={"f": lambda _: "Order Picked up"})
    assert result.output == {"status": ["Order Submitted", "Order Picked up"]}


async def test_parallel_actions_read_the_same_snapshot_and_merge_in_definition_order():
    seen = []

    def first(args):
        seen.append(("first", dict(args)))
        return {"v": "first", "first": True}

    def second(args):
        seen.append(("second", dict(args)))
        return {"v": "second"}

    result = await run("""
functions: [{name: a, type: custom, operation: a}, {name: b, type: custom, operation: b}]
states:
- name: s
  type: operation
  actionMode: parallel
  actions: [{functionRef: a}, {functionRef: b}]
  end: true
""", {"x": 0}, functions={"a": first, "b": second})
    assert sorted(seen) == [("first", {"x": 0}), ("second", {"x": 0})]
    assert result.output == {"x": 0, "v": "second", "first": True}


async def test_sequential_actions_see_earlier_results():
    seen = []
    await run("""
functions: [{name: a, type: custom, operation: a}, {name: b, type: custom, operation: b}]
states: [{name: s, type: operation, actions: [{functionRef: a}, {functionRef: b}], end: true}]
""", {}, functions={"a": lambda _: {"fromA": 1}, "b": lambda args: seen.append(args)})
    assert seen == [{"fromA": 1}]


async def test_action_condition_skips_without_error():
    calls = []
    result = await run(ONE_CALL % ("m", ", condition: '${ .go == true }'"), {"go": "yes"},
                       functions={"f": lambda _: calls.append(1) or {"ran": True}})
    assert calls == [] and result.output == {"go": "yes"}


json_objects = st.dictionaries(st.text("abc", min_size=1, max_size=2),
                               st.none() | st.integers() | st.text(max_size=2), max_size=3)
json_values = st.none() | st.integers() | st.text(max_size=3) | st.lists(st.integers(), max_size=3) | json_objects


@settings(max_examples=150, deadline=None)
@given(json_objects, json_values)
def test_merge_into_root_never_loses_existing_keys_and_never_mutates(data, result):
    import copy

    before = copy.deepcopy(data)
    merged = asyncio.run(merge_into(data, None, result, "act", {}))
    assert data == before
    assert isinstance(merged, dict)
    for key in data:
        assert key in merged
    if result is not None and not isinstance(result, dict):
        assert merged["act-output"] == result or isinstance(data.get("act-output"), list)


@settings(max_examples=100, deadline=None)
@given(json_objects, json_objects)
def test_merge_into_path_places_result_under_that_path(data, result):
    merged = asyncio.run(merge_into(data, compile_expression(".x.y", as_path=True), result or {"k": 1}, "act", {}))
    assert merged["x"]["y"] == {**(merged["x"]["y"])} and all(k in merged["x"]["y"] for k in (result or {"k": 1}))


async def test_fn_reference_evaluates_the_expression_function_in_conditions_and_arguments():
    seen = []
    result = await run("""
functions:
- {name: isAdult, type: expression, operation: ".applicant.age >= 18"}
- {name: f, type: custom, operation: f}
states:
- name: check
  type: switch
  dataConditions: [{condition: "${ fn:isAdult }", transition: call}]
  defaultCondition: {end: true}
- name: call
  type: operation
  actions: [{functionRef: {refName: f, arguments: {adult: "${ fn:isAdult }"}}}]
  end: true
""", {"applicant": {"age": 30}}, functions={"f": lambda args: seen.append(args)})
    assert result.ok and seen == [{"adult": True}]


def test_fn_reference_to_a_non_expression_function_is_a_definition_error():
    import pytest
    from xflow_runtime.errors import DefinitionError
    from tests.interpreter.support import plan

    with pytest.raises(DefinitionError, match="type expression"):
        plan("""
functions: [{name: f, type: custom, operation: f}]
states: [{name: s, type: switch, dataConditions: [{condition: "${ fn:f }", end: true}], defaultCondition: {end: true}}]
""")


async def test_a_function_mutating_its_arguments_cannot_change_state_data_or_the_plan():
    from tests.interpreter.support import plan as compile_text

    def vandal(arguments):
        arguments["injected"] = True
        if "nested" in arguments:
            arguments["nested"].append("vandal")
        return None

    compiled = compile_text("""
functions: [{name: f, type: custom, operation: f}, {name: g, type: custom, operation: g}]
states:
- name: s
  type: operation
  actions: [{functionRef: f}, {functionRef: {refName: g, arguments: {nested: [1]}}}]
  end: true
""")
    for _ in range(2):
        result = await run(compiled, {"keep": {"a": 1}}, functions={"f": vandal, "g": vandal})
        assert result.output == {"keep": {"a": 1}}
    assert compiled.states["s"].actions[1].ref.arguments.render({}, {}) == {"nested": [1]}
