"""SonataFlow shapes at run time: what each relaxation and convention does when an instance runs
(specs/compat-sonataflow.md §2, §5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xflow_runtime import Runtime
from xflow_runtime.definition import load_workflow
from xflow_runtime.engine.inprocess import run_workflow
from xflow_runtime.errors import DefinitionError


def plan(text: str, **kwargs):
    return load_workflow(text, **kwargs).plan


SWITCH = """
id: pick
start: Decide
states:
  - name: Decide
    type: switch
    dataConditions:
      - condition: .n > 10
        transition: Big
    onErrors:
      - errorRef: NoMatch
        transition: Small
  - name: Big
    type: inject
    data: {size: big}
    end: true
  - name: Small
    type: inject
    data: {size: small}
    end: true
errors:
  - {name: NoMatch, code: NoConditionMatched}
"""


async def test_switch_without_default_fails_with_no_condition_matched_and_onerrors_catch_it() -> None:
    assert (await run_workflow(plan(SWITCH), {"n": 11})).output["size"] == "big"
    assert (await run_workflow(plan(SWITCH), {"n": 1})).output["size"] == "small"
    uncaught = plan(SWITCH.replace("    onErrors:\n      - errorRef: NoMatch\n        transition: Small\n", ""))
    result = await run_workflow(uncaught, {"n": 1})
    assert result.status == "failed"
    assert result.error["code"] == "NoConditionMatched" and result.error["state"] == "Decide"


EVENTS = """
id: notify
specVersion: "0.8"
events:
  - {name: Ask, type: ask.v1, source: /me}
states:
  - name: Tell
    type: operation
    actions:
      - eventRef:
          triggerEventRef: Ask
          data: "${ {who: .name} }"
    end:
      produceEvents: [{eventRef: Ask, data: "${ {done: true} }"}]
"""


async def test_event_ref_without_result_produces_and_goes_on_and_a_consumed_event_can_be_produced() -> None:
    result = await run_workflow(plan(EVENTS), {"name": "Ada"})
    assert result.status == "completed", result.error
    assert [(e["type"], e["data"]) for e in result.produced_events] == [("ask.v1", {"who": "Ada"}),
                                                                          ("ask.v1", {"done": True})]
    assert result.output == {"name": "Ada"}


ARGUMENTS = """
id: args
specVersion: "0.8"
functions:
  - {name: echo, type: custom, operation: echo}
states:
  - name: Call
    type: operation
    actions:
      - functionRef:
          refName: echo
          arguments: "${ .items | map(. * 2) }"
        actionDataFilter: {toStateData: .doubled}
    end: true
"""


async def test_arguments_as_one_expression_string_are_the_whole_argument_value() -> None:
    seen = []
    result = await run_workflow(plan(ARGUMENTS), {"items": [1, 2]}, functions={"echo": lambda a: seen.append(a) or a})
    assert seen == [[2, 4]]
    assert result.output["doubled"] == [2, 4]


FOREACH = """
id: loop
specVersion: "0.8"
functions:
  - {name: inc, type: expression, operation: "$item + 1"}
  - {name: twice, type: expression, operation: "$WORKFLOW.prevActionResult * 2"}
  - {name: label, type: expression, operation: '"\\($n)-\\($WORKFLOW.instanceId | length > 0)"'}
states:
  - name: Each
    type: foreach
    inputCollection: .input
    outputCollection: .output
    actions:
      - functionRef: inc
      - functionRef: twice
    transition: Named
  - name: Named
    type: foreach
    inputCollection: .input
    iterationParam: n
    outputCollection: .labels
    actions:
      - functionRef: label
    end: true
"""


async def test_foreach_item_variable_and_previous_result() -> None:
    result = await run_workflow(plan(FOREACH), {"input": [1, 2, 3]})
    assert result.status == "completed", result.error
    assert result.output["output"] == [4, 6, 8]
    assert result.output["labels"] == ["1-true", "2-true", "3-true"]
    # $item outside a foreach is still unknown.
    with pytest.raises(DefinitionError, match=r"\$item is not defined"):
        load_workflow(FOREACH.replace("inputCollection: .input\n    outputCollection: .output",
                                      "inputCollection: '${ [$item] }'\n    outputCollection: .output"))


async def test_previous_result_in_an_operation_state() -> None:
    text = """
id: seq
specVersion: "0.8"
functions:
  - {name: one, type: expression, operation: "41"}
  - {name: next, type: expression, operation: "{answer: ($WORKFLOW.prevActionResult + 1)}"}
states:
  - name: Go
    type: operation
    actions:
      - {functionRef: one, actionDataFilter: {toStateData: .first}}
      - functionRef: next
    end: true
"""
    assert (await run_workflow(plan(text), {})).output == {"first": 41, "answer": 42}


def _schema_workflow(folder: Path, output_schema: dict, fail: bool = True) -> str:
    (folder / "schemas").mkdir()
    (folder / "schemas" / "item.json").write_text(json.dumps({"type": "object", "required": ["x"],
                                                              "properties": {"x": {"type": "number"}}}))
    (folder / "schemas" / "in.json").write_text(json.dumps({
        "$id": "classpath:/schemas/in.json", "type": "object",
        "properties": {"items": {"type": "array", "items": {"$ref": "item.json"}}}}))
    (folder / "schemas" / "out.json").write_text(json.dumps(output_schema))
    text = f"""
id: schemas
specVersion: "0.8"
dataInputSchema: schemas/in.json
extensions:
  - extensionid: workflow-output-schema
    outputSchema: {{schema: schemas/out.json, failOnValidationErrors: {str(fail).lower()}}}
states:
  - name: Sum
    type: inject
    data: {{}}
    stateDataFilter: {{output: "${{ {{total: ([.items[].x] | add)}} }}"}}
    end: true
"""
    (folder / "wf.yaml").write_text(text)
    return str(folder / "wf.yaml")


async def test_output_schema_and_input_schema_with_relative_refs(tmp_path: Path) -> None:
    path = _schema_workflow(tmp_path, {"type": "object", "required": ["total"],
                                       "properties": {"total": {"type": "integer", "maximum": 10}}})
    compiled = load_workflow(path).plan
    assert (await run_workflow(compiled, {"items": [{"x": 1}, {"x": 2}]})).output == {"total": 3}
    bad_input = await run_workflow(compiled, {"items": [{"x": "one"}]})
    assert bad_input.error["code"] == "validation" and "'one' is not of type 'number'" in bad_input.error["message"]
    too_big = await run_workflow(compiled, {"items": [{"x": 7}, {"x": 8}]})
    assert too_big.status == "failed" and too_big.error["code"] == "validation"
    assert "workflow output does not match workflow-output-schema at /total" in too_big.error["message"]


async def test_output_schema_without_fail_records_a_warning(tmp_path: Path) -> None:
    path = _schema_workflow(tmp_path, {"type": "object", "required": ["missing"]}, fail=False)
    seen = []
    result = await run_workflow(load_workflow(path).plan, {"items": []}, observer=seen.append)
    assert result.status == "completed"
    assert [e["event"] for e in seen if e["event"].endswith("validation_warning")] == ["output_validation_warning"]


async def test_unreadable_schema_reference_fails_with_our_code(tmp_path: Path) -> None:
    path = _schema_workflow(tmp_path, {"type": "object"})
    (tmp_path / "schemas" / "item.json").unlink()
    result = await run_workflow(load_workflow(path).plan, {"items": [{"x": 1}]})
    assert result.status == "failed"
    assert result.error["code"] == "validation" and "Wrapped" not in json.dumps(result.error)


async def test_jsonpath_workflow_end_to_end() -> None:
    text = """
id: jp
specVersion: "0.8"
expressionLang: jsonpath
functions:
  - {name: pick, type: expression, operation: "$.orders[?(@.total > 100)].id"}
  - {name: record, type: custom, operation: record}
states:
  - name: Route
    type: switch
    dataConditions:
      - condition: "{{ $.[?(@.country == 'US')] }}"
        transition: Pick
    defaultCondition: {end: true}
  - name: Pick
    type: operation
    actions:
      - functionRef: pick
        actionDataFilter: {toStateData: $.big}
      - functionRef:
          refName: record
          arguments: {first: "$.big[0]", country: "${ $.country }", text: "plain", mixed: "$.a $.b"}
    stateDataFilter: {output: "$.big"}
    end: true
"""
    calls = []
    compiled = plan(text)
    data = {"country": "US", "orders": [{"id": "a", "total": 50}, {"id": "b", "total": 150}]}
    result = await run_workflow(compiled, data, functions={"record": lambda a: calls.append(a)})
    assert result.output == ["b"]
    assert calls == [{"first": "b", "country": "US", "text": "plain", "mixed": "$.a $.b"}]
    elsewhere = await run_workflow(compiled, {"country": "FR", "orders": []}, functions={"record": calls.append})
    assert elsewhere.output == {"country": "FR", "orders": []}


def test_runtime_strict_refuses_relaxations(tmp_path: Path) -> None:
    path = tmp_path / "wf.yaml"
    path.write_text("id: x\nstates: [{name: s, type: inject, data: {}, end: true}]\n")
    assert Runtime().load(path) is not None
    with pytest.raises(DefinitionError, match="XF140"):
        Runtime(strict=True).load(path)


async def test_inline_schema_refs_resolve_against_the_workflow_folder(tmp_path: Path) -> None:
    (tmp_path / "defs").mkdir()
    (tmp_path / "defs" / "n.json").write_text(json.dumps({"type": "integer"}))
    text = """
id: inline
specVersion: "0.8"
dataInputSchema:
  schema: {type: object, properties: {n: {$ref: defs/n.json}}}
states: [{name: s, type: inject, data: {}, end: true}]
"""
    compiled = load_workflow(text, base_dir=tmp_path).plan
    assert (await run_workflow(compiled, {"n": 1})).status == "completed"
    wrong = await run_workflow(compiled, {"n": "one"})
    assert wrong.error["code"] == "validation" and "'one' is not of type 'integer'" in wrong.error["message"]
