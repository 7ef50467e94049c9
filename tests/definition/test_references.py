"""Top-level fields given as file references are inlined; problems inside point into those files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xflow_runtime.definition import check_workflow, load_workflow

from tests.definition.helpers import BASE

#: the base workflow's inline `functions:` section, moved into files by these tests
FUNCTIONS_BLOCK = BASE[BASE.index("functions:"):BASE.index("events:")]


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _workflow_with(folder: Path, replacement: str) -> Path:
    return _write(folder, "wf.yaml", BASE.replace(FUNCTIONS_BLOCK, replacement))


@pytest.mark.parametrize("reference", ["defs/functions.yaml", "./defs/functions.yaml", "file://defs/functions.yaml"])
def test_relative_and_file_uri_references_are_inlined(tmp_path: Path, reference: str) -> None:
    _write(tmp_path, "defs/functions.yaml", FUNCTIONS_BLOCK)
    loaded = load_workflow(_workflow_with(tmp_path, f"functions: {reference}\n"))
    assert [f["name"] for f in loaded.document["functions"]] == ["greet", "inc"]
    assert loaded.plan is not None


def test_absolute_file_uri(tmp_path: Path) -> None:
    target = _write(tmp_path, "elsewhere/f.json", json.dumps({"functions": [
        {"name": "greet", "type": "custom", "operation": "python:x:y"},
        {"name": "inc", "type": "expression", "operation": ".count + 1"}]}))
    loaded = load_workflow(_workflow_with(tmp_path / "wf", f"functions: file://{target}\n"))
    assert loaded.document["functions"][0]["operation"] == "python:x:y"


def test_problem_inside_referenced_file_points_into_that_file(tmp_path: Path) -> None:
    _write(tmp_path, "defs/functions.yaml", FUNCTIONS_BLOCK.replace("    type: custom\n", "    type: custm\n"))
    wf = _workflow_with(tmp_path, "functions: defs/functions.yaml\n")
    found = [str(d) for d in check_workflow(wf, source_name="wf.yaml").diagnostics]
    assert found == ["defs/functions.yaml:3:11 /functions/0/type: 'custm' is not one of rest, asyncapi, rpc, "
                     "graphql, odata, expression, custom, a2a (did you mean 'custom'?) [XF054 not-allowed-value]"]


def test_lint_problem_in_referenced_file_and_in_main_file(tmp_path: Path) -> None:
    _write(tmp_path, "errors.yaml", "errors:\n  - name: Boom\n  - name: Boom\n")
    text = BASE.replace('errors:\n  - name: Boom\n    code: "500"\n', "errors: errors.yaml\n")
    wf = _write(tmp_path, "wf.yaml", text)
    found = [str(d) for d in check_workflow(wf, source_name=str(wf)).diagnostics]
    assert found == [f"{tmp_path}/errors.yaml:3:11 /errors/1/name: duplicate errors name 'Boom' (first defined "
                     "at /errors/0) [XF115 duplicate-definition-name]"]


def test_missing_file_points_at_the_reference(tmp_path: Path) -> None:
    wf = _workflow_with(tmp_path, "functions: nope/functions.yaml\n")
    found = check_workflow(wf, source_name="wf.yaml").diagnostics
    assert str(found[0]).startswith("wf.yaml:4:12 /functions: referenced file 'nope/functions.yaml' not found")
    assert found[0].code == "XF020"


def test_http_reference_is_refused_offline(tmp_path: Path) -> None:
    wf = _workflow_with(tmp_path, "functions: https://example.com/functions.json\n")
    found = check_workflow(wf, source_name="wf.yaml").diagnostics
    assert [d.code for d in found][0] == "XF021"
    assert "is not fetched (the loader works offline)" in found[0].message
    assert (found[0].line, found[0].column) == (4, 12)


def test_unsupported_scheme(tmp_path: Path) -> None:
    wf = _workflow_with(tmp_path, "functions: classpath:functions.json\n")
    assert check_workflow(wf).diagnostics[0].code == "XF020"


def test_wrong_shape_of_referenced_file(tmp_path: Path) -> None:
    _write(tmp_path, "functions.yaml", "functions:\n  name: greet\n")
    wf = _workflow_with(tmp_path, "functions: functions.yaml\n")
    found = [str(d) for d in check_workflow(wf, source_name="wf.yaml").diagnostics]
    assert found[0] == ("functions.yaml:2:3 /functions: found a mapping, expected a list of functions "
                        "(or a mapping {functions: …}) [XF022 reference-bad-shape]")


def test_syntax_error_in_referenced_file(tmp_path: Path) -> None:
    _write(tmp_path, "events.yaml", "events:\n  - name: [oops\n")
    text = BASE.replace("events:\n  - name: Ping\n", "events: events.yaml\nx-old:\n  - name: Ping\n")
    found = check_workflow(_write(tmp_path, "wf.yaml", text), source_name="wf.yaml").diagnostics
    assert found[0].file == "events.yaml" and found[0].code == "XF001" and found[0].line == 3


def test_secrets_constants_and_timeouts_files(tmp_path: Path) -> None:
    _write(tmp_path, "secrets.json", '["API_KEY"]')
    _write(tmp_path, "constants.yaml", "constants:\n  greeting: hi\n")
    _write(tmp_path, "timeouts.yaml", "workflowExecTimeout: PT1M\n")
    text = BASE.replace("start: Greet\n", "start: Greet\nsecrets: secrets.json\nconstants: constants.yaml\n"
                                          "timeouts: timeouts.yaml\n")
    loaded = load_workflow(_write(tmp_path, "wf.yaml", text))
    assert loaded.document["secrets"] == ["API_KEY"]
    assert loaded.document["constants"] == {"greeting": "hi"}  # a sole wrapping key is unwrapped
    assert loaded.document["timeouts"] == {"workflowExecTimeout": "PT1M"}


def test_constants_file_with_other_keys_is_not_unwrapped(tmp_path: Path) -> None:
    _write(tmp_path, "constants.yaml", "constants: 1\nother: 2\n")
    text = BASE.replace("start: Greet\n", "start: Greet\nconstants: constants.yaml\n")
    assert load_workflow(_write(tmp_path, "wf.yaml", text)).document["constants"] == {"constants": 1, "other": 2}


def test_data_input_schema_file_is_loaded_inline(tmp_path: Path) -> None:
    _write(tmp_path, "input.json", '{"type": "object", "required": ["name"]}')
    text = BASE.replace("start: Greet\n", "start: Greet\ndataInputSchema: input.json\n")
    loaded = load_workflow(_write(tmp_path, "wf.yaml", text))
    assert loaded.document["dataInputSchema"] == {"schema": {"type": "object", "required": ["name"]},
                                                  "failOnValidationErrors": True}


def test_data_input_schema_that_is_not_a_schema(tmp_path: Path) -> None:
    _write(tmp_path, "input.yaml", "type: objekt\n")
    text = BASE.replace("start: Greet\n", "start: Greet\ndataInputSchema:\n  schema: input.yaml\n"
                                          "  failOnValidationErrors: false\n")
    found = check_workflow(_write(tmp_path, "wf.yaml", text), source_name="wf.yaml").diagnostics
    assert [(d.file, d.line, d.code) for d in found] == [("input.yaml", 1, "XF022")]
    assert found[0].message.startswith("not a valid JSON Schema: 'objekt' is not valid")


def test_file_uri_is_percent_decoded(tmp_path: Path) -> None:
    _write(tmp_path, "my defs/functions.yaml", FUNCTIONS_BLOCK)
    loaded = load_workflow(_workflow_with(tmp_path, "functions: file://my%20defs/functions.yaml\n"))
    assert len(loaded.document["functions"]) == 2


def test_referenced_file_used_twice_is_read_once_and_lint_sees_both(tmp_path: Path) -> None:
    _write(tmp_path, "defs.yaml", FUNCTIONS_BLOCK + "events:\n  - {name: Ping, type: ping, source: tests}\n"
                                  "  - {name: Pong, type: pong, kind: produced}\n")
    text = BASE.replace(FUNCTIONS_BLOCK, "functions: defs.yaml\n").replace(
        "events:\n  - name: Ping\n    type: ping\n    source: tests\n  - name: Pong\n    type: pong\n"
        "    kind: produced\n", "events: defs.yaml\n")
    loaded = load_workflow(_write(tmp_path, "wf.yaml", text))
    assert [e["name"] for e in loaded.document["events"]] == ["Ping", "Pong"]
    assert [f["name"] for f in loaded.document["functions"]] == ["greet", "inc"]
