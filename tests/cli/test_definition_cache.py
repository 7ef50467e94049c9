"""``xflow run``'s cache of checked documents (specs/performance.md §5): a hit skips the check,
and nothing the check read can change without the full check running again."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from xflow_runtime.definition import load_workflow
from xflow_runtime.plan import compile_plan
from xflow_runtime.runtime import definition_cache

REPO = Path(__file__).resolve().parents[2]

PRICED = """
id: priced
specVersion: "0.8"
start: Price
functions: defs/functions.yaml
states:
  - name: Price
    type: operation
    actions:
      - functionRef: price
        actionDataFilter: {toStateData: "${ .price }"}
    end: true
"""
FUNCTIONS = """
functions:
  - name: price
    type: expression
    operation: ".amount * 2"
"""


def _entries(workdir: Path) -> list[Path]:
    return sorted((workdir / ".cache" / "xflow-runtime" / "definitions").glob("*.json"))


@pytest.fixture
def priced(workdir: Path) -> Path:
    (workdir / "defs").mkdir()
    (workdir / "defs" / "functions.yaml").write_text(FUNCTIONS)
    (workdir / "priced.yaml").write_text(PRICED)
    return workdir


def test_a_run_stores_its_checked_document_and_a_second_run_gives_the_same_output(cli, workdir) -> None:
    first = cli("run", "greet.yaml", "--ephemeral", "--input", '{"name": "Ada"}')
    assert first.code == 0, first.err
    [entry] = _entries(workdir)
    stored = json.loads(entry.read_text())
    assert stored["format"] == definition_cache.FORMAT and stored["key"] == entry.stem
    assert stored["document"]["id"] == "greet" and stored["files"] == []
    second = cli("run", "greet.yaml", "--ephemeral", "--input", '{"name": "Ada"}')
    assert (second.code, second.out) == (0, first.out)
    assert _entries(workdir) == [entry]


def test_a_hit_imports_neither_the_yaml_parser_nor_the_schema_validator(workdir) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(workdir / ".cache")}
    env.pop("XFLOW_DEFINITION_CACHE", None)
    script = ("import sys; from xflow_runtime.cli.main import main; code = main(sys.argv[1:]); "
              "print(sorted(m for m in ('yaml', 'jsonschema_rs', 'xflow_runtime.definition') if m in sys.modules),"
              " file=sys.stderr); sys.exit(code)")
    command = [sys.executable, "-c", script, "run", "greet.yaml", "--ephemeral", "--input", '{"name": "Ada"}']
    runs = [subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=120)
            for _ in range(2)]
    assert [run.returncode for run in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    assert runs[0].stderr.splitlines()[-1] == "['jsonschema_rs', 'xflow_runtime.definition', 'yaml']"
    assert runs[1].stderr.splitlines()[-1] == "[]"
    assert runs[0].stdout == runs[1].stdout


def test_a_changed_referenced_file_is_checked_again(cli, priced) -> None:
    assert cli("run", "priced.yaml", "--ephemeral", "--input", '{"amount": 2}').json()["price"] == 4
    (priced / "defs" / "functions.yaml").write_text(FUNCTIONS.replace("* 2", "* 3"))
    assert cli("run", "priced.yaml", "--ephemeral", "--input", '{"amount": 2}').json()["price"] == 6
    (priced / "defs" / "functions.yaml").write_text(FUNCTIONS.replace("type: expression", "type: nonsense"))
    broken = cli("run", "priced.yaml", "--ephemeral", "--input", '{"amount": 2}')
    assert broken.code == 2 and "functions.yaml" in broken.err
    (priced / "defs" / "functions.yaml").unlink()
    missing = cli("run", "priced.yaml", "--ephemeral", "--input", '{"amount": 2}')
    assert missing.code == 2 and "not found" in missing.err


def test_a_changed_document_is_checked_again(cli, workdir) -> None:
    assert cli("run", "greet.yaml", "--ephemeral").code == 0
    (workdir / "greet.yaml").write_text((workdir / "invalid.yaml").read_text())
    result = cli("run", "greet.yaml", "--ephemeral")
    assert result.code == 2 and "Missing" in result.err


@pytest.mark.parametrize("damage", ["not json", "other key", "uncompilable"])
def test_a_damaged_entry_is_ignored_and_written_again(cli, workdir, damage) -> None:
    expected = cli("run", "greet.yaml", "--ephemeral", "--input", '{"name": "Ada"}').out
    [entry] = _entries(workdir)
    original = entry.read_text()
    stored = json.loads(original)
    if damage == "not json":
        entry.write_text("{")
    elif damage == "other key":
        entry.write_text(json.dumps({**stored, "key": "0" * 64}))
    else:
        stored["document"]["states"][0]["type"] = "no-such-type"
        entry.write_text(json.dumps(stored))
    again = cli("run", "greet.yaml", "--ephemeral", "--input", '{"name": "Ada"}')
    assert (again.code, again.out) == (0, expected)
    assert entry.read_text() == original


def test_the_environment_turns_the_cache_off(cli, workdir, monkeypatch) -> None:
    monkeypatch.setenv("XFLOW_DEFINITION_CACHE", "off")
    assert cli("run", "greet.yaml", "--ephemeral").code == 0
    assert _entries(workdir) == []


def test_without_a_home_or_xdg_cache_home_nothing_is_cached(cli, workdir, monkeypatch) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setattr(os.path, "expanduser", lambda path: path)  # no password entry either
    assert cli("run", "greet.yaml", "--ephemeral").code == 0
    assert [p.name for p in workdir.iterdir() if p.name.startswith(("~", ".cache", "xflow-runtime"))] == []


def test_validate_neither_reads_nor_writes_the_cache(cli, workdir) -> None:
    assert cli("validate", "greet.yaml").code == 0
    assert _entries(workdir) == []


def test_the_cache_keeps_at_most_max_entries(workdir) -> None:
    document = load_workflow(workdir / "greet.yaml").document
    with definition_cache.enabled_from_environment():
        for n in range(definition_cache.MAX_ENTRIES + 3):
            definition_cache.store(f"# {n}\n", workdir, "greet.yaml", False, document, ())
    assert len(_entries(workdir)) == definition_cache.MAX_ENTRIES


@pytest.mark.parametrize("value", [(1, 2), {1: "a"}, 1.5e400, float("nan")])
def test_a_document_json_would_change_is_not_stored(workdir, value) -> None:
    document = load_workflow(workdir / "greet.yaml").document
    document["states"][0]["data"] = {"x": value}
    with definition_cache.enabled_from_environment():
        definition_cache.store("id: x\n", workdir, "greet.yaml", False, document, ())
    assert _entries(workdir) == []


def test_loads_outside_the_command_never_use_the_cache(workdir) -> None:
    document = load_workflow(workdir / "greet.yaml").document
    source = (workdir / "greet.yaml").read_text()
    definition_cache.store(source, workdir, "greet.yaml", False, document, ())
    assert _entries(workdir) == []
    assert definition_cache.cached_plan(source, workdir, "greet.yaml", False) is None


WORKFLOWS = sorted(p for p in (REPO / "workflows").glob("*.yaml") if "specVersion" in p.read_text())


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_compiling_never_changes_the_checked_document(path) -> None:
    """The cache stores the document after the plan was compiled from it: that must be the
    document the check produced."""
    document = load_workflow(path, compile=False).document
    before = copy.deepcopy(document)
    compile_plan(document, base_dir=str(path.parent), source_name=str(path))
    assert document == before
