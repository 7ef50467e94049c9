"""Reading text: YAML/JSON syntax, duplicate keys, tabs, empty or binary input — always positioned."""

from __future__ import annotations

from pathlib import Path

import pytest

from xflow_runtime.definition import check_workflow, load_workflow
from xflow_runtime.errors import DefinitionError

from tests.definition.helpers import BASE, lines


def test_valid_base_document_has_no_diagnostics_and_compiles() -> None:
    loaded = load_workflow(BASE, source_name="wf.yaml")
    assert loaded.diagnostics == []
    assert loaded.document["states"][0]["name"] == "Greet"
    assert loaded.plan is not None
    assert loaded.source_name == "wf.yaml"


def test_duplicate_key_is_an_error_with_both_lines() -> None:
    text = BASE.replace("start: Greet\n", "start: Greet\nstart: Done\n")
    assert lines(text) == ["wf.yaml:4:1 /start: duplicate key 'start' (first defined on line 3) "
                           "[XF003 duplicate-key]"]


def test_duplicate_key_deep_inside_a_state() -> None:
    text = BASE.replace("    type: inject\n", "    type: inject\n    type: sleep\n")
    assert lines(text) == ["wf.yaml:48:5 /states/2/type: duplicate key 'type' (first defined on line 47) "
                           "[XF003 duplicate-key]"]


def test_yaml_syntax_error_keeps_the_parser_position() -> None:
    assert lines("id: x\nstates: [1, 2\n") == [
        "wf.yaml:3:1: invalid YAML: did not find expected ',' or ']' (while parsing a flow sequence) "
        "[XF001 yaml-syntax]"]


def test_tab_indentation_is_named() -> None:
    assert lines("id: x\nstates:\n\t- name: a\n") == [
        "wf.yaml:3:1: tab character where YAML expects spaces; indent with spaces [XF004 tab-indentation]"]


@pytest.mark.parametrize("text", ["", "   \n\n", "# only a comment\n"])
def test_empty_document(text: str) -> None:
    assert [d.code for d in check_workflow(text, source_name="wf.yaml").diagnostics] == ["XF005"]


@pytest.mark.parametrize("text,found", [("- a\n- b\n", "array"), ("hello\n", "string"), ("42\n", "integer")])
def test_root_must_be_a_mapping(text: str, found: str) -> None:
    assert lines(text) == [f"wf.yaml:1:1: the document root is {found}, expected a mapping with id, "
                           "specVersion and states [XF008 root-not-mapping]"]


def test_several_documents_in_one_stream() -> None:
    assert lines(BASE + "---\nid: other\n") == [
        "wf.yaml:54:1: the file holds several YAML documents (---); expected exactly one workflow "
        "[XF010 multiple-documents]"]


def test_binary_garbage_is_not_text(tmp_path: Path) -> None:
    path = tmp_path / "garbage.yaml"
    path.write_bytes(bytes(range(256)) * 4)
    result = check_workflow(path, source_name="garbage.yaml")
    assert [str(d) for d in result.diagnostics] == [
        "garbage.yaml: the file contains NUL bytes: it is not a text document [XF006 not-text]"]


def test_invalid_utf8_reports_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("id: caf\u00e9\n".encode("latin-1"))
    assert [str(d) for d in check_workflow(path, source_name="latin1.yaml").diagnostics] == [
        "latin1.yaml:1:8: the file is not UTF-8 text (byte 0xe9 at offset 7) [XF006 not-text]"]


def test_unreadable_file_is_a_diagnostic(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    result = check_workflow(missing, source_name="nope.yaml")
    assert [str(d) for d in result.diagnostics] == [
        "nope.yaml: cannot read file: No such file or directory [XF007 unreadable-file]"]
    directory = check_workflow(tmp_path, source_name="dir")
    assert directory.diagnostics[0].code == "XF007"


def test_json_syntax_error_has_json_position(tmp_path: Path) -> None:
    path = tmp_path / "wf.json"
    path.write_text('{\n  "id": "x",\n  "states": [,]\n}\n')
    assert [str(d) for d in check_workflow(path, source_name="wf.json").diagnostics] == [
        "wf.json:3:14: invalid JSON: Expecting value [XF002 json-syntax]"]


def test_json_duplicate_keys_and_tabs_are_positioned(tmp_path: Path) -> None:
    path = tmp_path / "wf.json"
    path.write_text('{\n\t"id": "x",\n\t"id": "y",\n\t"specVersion": "0.8", "states": []}\n')
    found = [str(d) for d in check_workflow(path, source_name="wf.json").diagnostics]
    assert "wf.json:3:2 /id: duplicate key 'id' (first defined on line 2) [XF003 duplicate-key]" in found
    assert any(line.startswith("wf.json:4:34 /states: found an empty array") for line in found)  # minItems, positioned


def test_json_numbers_keep_json_meaning(tmp_path: Path) -> None:
    path = tmp_path / "wf.json"
    path.write_text('{"id": "x", "specVersion": "0.8", "constants": {"big": 1e3}, '
                    '"states": [{"name": "a", "type": "inject", "data": {}, "end": true}]}')
    assert load_workflow(path).document["constants"] == {"big": 1000.0}


@pytest.mark.parametrize("snippet,message", [
    ("key: !!binary aGVsbG8=", "wf.yaml:5:8 /metadata/key: binary (!!binary) values have no JSON equivalent"),
    ("key: .nan", "wf.yaml:5:8 /metadata/key: '.nan' (NaN/infinity) has no JSON equivalent"),
    ("key: !Custom x", "wf.yaml:5:8 /metadata/key: unsupported YAML value: could not determine a constructor "
                       "for the tag '!Custom'"),
    ("on: x", "wf.yaml:5:3 /metadata: mapping key 'on' is not a string (YAML 1.1 reads it as a boolean; quote it)"),
])
def test_values_without_a_json_equivalent(snippet: str, message: str) -> None:
    text = BASE.replace("start: Greet\n", f"start: Greet\nmetadata:\n  {snippet}\n")
    assert f"{message} [XF009 not-json-value]" in lines(text)


def test_recursive_alias_and_alias_bombs_stop_cleanly() -> None:
    assert "wf.yaml:1:4 /a/0: recursive YAML alias: a value contains itself [XF011 too-deep]" in lines("a: &x [*x]\n")
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(7))
    assert "XF011" in [d.code for d in check_workflow(bomb).diagnostics]


def test_dates_stay_text_and_merge_keys_work() -> None:
    text = BASE.replace('id: base\n', 'id: base\nversion: 2024-01-01\n').replace(
        "    data:\n      ok: true\n", "    data:\n      <<: {ok: false, extra: 1}\n      ok: true\n")
    loaded = load_workflow(text)
    assert loaded.document["version"] == "2024-01-01"
    assert loaded.document["states"][2]["data"] == {"ok": True, "extra": 1}


def test_deep_nesting_is_reported_not_crashing() -> None:
    assert [d.code for d in check_workflow("a: " + "[" * 5000 + "]" * 5000 + "\n").diagnostics] == ["XF011"]
    assert [d.code for d in check_workflow("[" * 5000 + "]" * 5000, source_name="x.json").diagnostics] \
        == ["XF011"]


def test_load_raises_definition_error_with_every_problem() -> None:
    text = BASE.replace("transition: Decide", "transition: Nowhere").replace("refName: greet", "refName: nope")
    with pytest.raises(DefinitionError) as caught:
        load_workflow(text, source_name="wf.yaml")
    assert sorted(d.code for d in caught.value.diagnostics) == ["XF101", "XF104"]  # no reachability noise while errors exist
    assert "2 error(s)" in str(caught.value)


def test_path_or_text_detection(tmp_path: Path) -> None:
    path = tmp_path / "wf.yaml"
    path.write_text(BASE)
    assert load_workflow(str(path)).source_name == str(path)
    assert load_workflow(path).base_dir == tmp_path
    assert load_workflow(BASE).source_name == "<string>"
    with pytest.raises(DefinitionError) as caught:
        load_workflow("missing-file.yaml")
    assert caught.value.diagnostics[0].code == "XF007"


def test_json_edge_cases_keep_positions(tmp_path: Path) -> None:
    path = tmp_path / "wf.json"
    path.write_text('{"id": "x\\ud83d\\ude00", "specVersion": "0.8",\n "states": [], "big": 1e400,\n'
                    ' "nel": "a\u0085b\u2028c", "x": 5}')
    found = [str(d) for d in check_workflow(path, source_name="wf.json").diagnostics]
    assert found == [
        "wf.json:2:12 /states: found an empty array, expected at least 1 item(s) [XF050 schema-violation]",
        "wf.json:2:23 /big: number too large: it does not fit a 64-bit float [XF009 not-json-value]",
    ]


def test_a_missing_file_name_without_suffix_gets_a_hint() -> None:
    with pytest.raises(DefinitionError) as caught:
        load_workflow("my-workflow")
    assert str(caught.value.diagnostics[0]) == (
        "<string>:1:1: the document root is string, expected a mapping with id, specVersion and states (read as "
        "YAML text: no file named 'my-workflow' exists) [XF008 root-not-mapping]")
