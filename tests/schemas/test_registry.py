"""The schema registry and the ``xflow schema`` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from jsonschema import Draft202012Validator
from referencing.exceptions import Unresolvable

from xflow_runtime.cli.main import main
from xflow_runtime.definition import schema_registry
from tests.schemas.corpus import all_documents
from tests.schemas.validators import REPO


def run_registry_alone(module_path: Path, body: str) -> list[str]:
    """Load schema_registry.py by path (as ``r``) in a fresh interpreter, run ``body``, return the
    printed words: the module on its own, without its package (whose __init__ is the loader's)."""
    code = ("import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('r', {str(module_path)!r})\n"
            "r = importlib.util.module_from_spec(spec); spec.loader.exec_module(r)\n" + body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()


def test_every_file_is_a_valid_2020_12_schema_with_a_stable_id() -> None:
    files = schema_registry.schema_files()
    assert set(files) >= {"workflow", "states", "agents", "usertask", "actions", "common", "timeouts",
                          "functions", "events", "errors", "auth"}
    for name, document in files.items():
        Draft202012Validator.check_schema(document)
        assert document["$id"] == f"https://xflow-runtime.dev/schemas/0.8/{name}.json"
        assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_every_ref_resolves_offline() -> None:
    registry = schema_registry.registry()
    for name, document in schema_registry.schema_files().items():
        resolver = registry.resolver(base_uri=document["$id"])
        for ref in set(_refs(document)):
            try:
                resolver.lookup(ref)
            except Unresolvable as error:  # pragma: no cover - the assertion message is the point
                pytest.fail(f"{name}.json: $ref {ref!r} does not resolve: {error}")


def test_workflow_validator_is_cached_and_judges_documents() -> None:
    validator = schema_registry.workflow_validator()
    assert validator is schema_registry.workflow_validator()
    hello = {"id": "hello", "specVersion": "0.8",
             "states": [{"name": "Hello", "type": "inject", "data": {"result": "Hello"}, "end": True}]}
    assert validator.is_valid(hello)
    assert not validator.is_valid({**hello, "states": []})


def test_unknown_schema_name_is_a_clear_error() -> None:
    with pytest.raises(schema_registry.SchemaNotFound, match="no schema named 'nope'; known: actions"):
        schema_registry.schema("nope")


def test_the_registry_module_imports_no_jsonschema_until_asked() -> None:
    # `xflow validate` must start fast: jsonschema is imported on first use only. The module is
    # loaded on its own (its package __init__ belongs to the loader and may import more).
    module_path = REPO / "xflow_runtime" / "definition" / "schema_registry.py"
    words = run_registry_alone(module_path, "print('jsonschema' in sys.modules, 'referencing' in sys.modules, "
                                            "len(r.schema_files()))")
    assert words == ["False", "False", str(len(list((REPO / "schemas").glob("*.json"))))]


def test_cli_prints_the_root_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == schema_registry.schema("workflow")


def test_cli_prints_one_schema_by_name_and_lists_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--name", "agents"]) == 0
    assert json.loads(capsys.readouterr().out)["$id"].endswith("/agents.json")
    assert main(["schema", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "workflow\thttps://xflow-runtime.dev/schemas/0.8/workflow.json" in lines


def test_cli_unknown_name_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--name", "nope"]) == 2
    assert "no schema named 'nope'" in capsys.readouterr().err


def test_cli_writes_every_file_and_the_copies_validate_alike(tmp_path: Path) -> None:
    target = tmp_path / "out" / "schemas"
    assert main(["schema", "--write", str(target)]) == 0
    written = {path.stem: json.loads(path.read_text()) for path in target.glob("*.json")}
    assert written == schema_registry.schema_files()


def test_cli_write_failure_is_reported_without_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert main(["schema", "--write", str(blocker / "sub")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("xflow schema: cannot write to") and "Traceback" not in err


def test_bin_xflow_schema_runs_from_a_checkout() -> None:
    output = subprocess.run([sys.executable, str(REPO / "bin" / "xflow"), "schema", "--name", "common"],
                            capture_output=True, text=True, check=True)
    assert json.loads(output.stdout)["$id"].endswith("/common.json")


def test_the_bundle_is_self_contained_and_judges_like_the_files() -> None:
    bundle = schema_registry.bundled_schema()
    assert all(ref.startswith("#/$defs/") for ref in _refs(bundle))
    Draft202012Validator.check_schema(bundle)
    alone = Draft202012Validator(bundle)  # no registry: every $ref is local
    files = schema_registry.workflow_validator()
    documents = all_documents()
    assert len(documents) > 100
    for document in documents:
        assert sorted(e.json_path for e in alone.iter_errors(document)) == sorted(
            e.json_path for e in files.iter_errors(document))


def test_cli_bundle_prints_and_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--bundle"]) == 0
    assert json.loads(capsys.readouterr().out) == schema_registry.bundled_schema()
    assert main(["schema", "--bundle", "--write", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "workflow.bundle.json").read_text())["$id"].endswith("/workflow.bundle.json")
    assert (tmp_path / "agents.json").is_file()


def test_an_installed_package_finds_its_force_included_copy(tmp_path: Path) -> None:
    # A wheel holds the schemas as xflow_runtime/_schemas (pyproject force-include) and no
    # <repo>/schemas beside the package: lay that out and load the module from there.
    import shutil

    package = tmp_path / "site" / "xflow_runtime"
    (package / "definition").mkdir(parents=True)
    shutil.copy(REPO / "xflow_runtime" / "definition" / "schema_registry.py", package / "definition")
    shutil.copytree(REPO / "schemas", package / "_schemas")
    words = run_registry_alone(package / "definition" / "schema_registry.py", (
        "print(r.schema_dir()); print(r.workflow_validator().is_valid({'id': 'x', 'specVersion': '0.8', "
        "'states': [{'name': 'a', 'type': 'inject', 'data': {}, 'end': True}]}))"))
    assert words == [str(package / "_schemas"), "True"]


def test_missing_schemas_are_a_clear_error(tmp_path: Path) -> None:
    import shutil

    package = tmp_path / "xflow_runtime"
    (package / "definition").mkdir(parents=True)
    shutil.copy(REPO / "xflow_runtime" / "definition" / "schema_registry.py", package / "definition")
    words = run_registry_alone(package / "definition" / "schema_registry.py",
                               "try:\n    r.schema_files()\nexcept r.SchemaNotFound as e:\n    print(e)")
    assert " ".join(words).startswith("the xFlow JSON Schemas were not found")
