"""The fast schema check (jsonschema-rs) against the explaining Python validator, on every corpus.

The loader trusts the fast validator's "valid" and asks the Python validator only when it says
"invalid" (``schema_check``). So the one thing that must never happen is the fast validator
accepting a document the Python one rejects; and for the fast path to pay off they should agree
on the rest too. Both are checked on every document the project has (schema corpora, malformed
files, conformance definitions, shipped workflows) and on generated documents and mutants.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.definition.helpers import BASE
from tests.schemas.strategies import mutants, paths_of, workflows
from tests.schemas.test_xflow_extensions import document_of
from xflow_runtime.definition import check_workflow
from xflow_runtime.definition.reader import read_path
from xflow_runtime.definition.schema_check import fast_accepts
from xflow_runtime.definition.schema_registry import fast_workflow_validator, workflow_validator

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
SETTINGS = settings(max_examples=150, derandomize=True, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
#: values where Python and Rust validators could plausibly part ways: `$` before a trailing
#: newline, integral floats for integers, integers past 64 bits, non-ASCII, -0.0, huge floats.
EDGE_VALUES = ["name\n", "a" * 65, 1.0, 2.5, 2**70, -(2**70), -0.0, 1e308, "ü", "", 0, True, None]


def _corpus_documents() -> list[Any]:
    found: list[Any] = []
    for path in sorted((TESTS / "schemas" / "corpus").glob("*.yaml")):
        found += [document_of(entry) for entry in yaml.safe_load_all(path.read_text()) if entry]
    for path in sorted((TESTS / "definition" / "malformed").iterdir()):
        if path.suffix in (".yaml", ".yml", ".json"):
            value = read_path(path, path.name).value
            if value is not None:
                found.append(value)
    for path in sorted((TESTS / "conformance" / "cases").rglob("*.yaml")):
        case = yaml.safe_load(path.read_text())
        if isinstance(case, dict) and isinstance(case.get("given"), dict) and "definition" in case["given"]:
            found.append(case["given"]["definition"])
    for path in sorted((REPO / "workflows").glob("*.yaml")):
        if not path.name.endswith(".replies.yaml"):
            found.append(yaml.safe_load(path.read_text()))
    found.append(yaml.safe_load(BASE))
    return found


CORPUS = _corpus_documents()


def _assert_agree(document: Any) -> None:
    python_valid = workflow_validator().is_valid(document)
    if fast_accepts(fast_workflow_validator(), document):
        assert python_valid, "the fast validator accepted a document the Python validator rejects"
    else:
        assert not python_valid or _not_json(document), "the fast validator rejected a valid document"


def _not_json(value: Any) -> bool:
    """A value the fast validator cannot take; the loader then asks the Python validator (safe)."""
    try:
        fast_workflow_validator().is_valid(value)
    except Exception:  # noqa: BLE001
        return True
    return False


def test_the_corpora_are_large_and_mixed() -> None:
    verdicts = [workflow_validator().is_valid(document) for document in CORPUS]
    assert len(CORPUS) > 200 and verdicts.count(True) > 50 and verdicts.count(False) > 50


@pytest.mark.parametrize("index", range(len(CORPUS)))
def test_both_validators_agree_on_every_corpus_document(index: int) -> None:
    _assert_agree(CORPUS[index])


@SETTINGS
@given(workflows())
def test_both_accept_generated_workflows(document: dict[str, Any]) -> None:
    assert fast_accepts(fast_workflow_validator(), document)
    _assert_agree(document)


@SETTINGS
@given(mutants())
def test_both_agree_on_mutants(document: dict[str, Any]) -> None:
    _assert_agree(document)


@SETTINGS
@given(st.data())
def test_both_agree_on_edge_values_anywhere(data: st.DataObject) -> None:
    document = copy.deepcopy(data.draw(st.sampled_from([d for d in CORPUS if isinstance(d, dict)])))
    path = data.draw(st.sampled_from([p for p in paths_of(document) if p]))
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = data.draw(st.sampled_from(EDGE_VALUES))
    _assert_agree(document)


@pytest.mark.parametrize("text", [
    BASE,
    BASE.replace("type: operation", "type: operaton", 1),
    BASE.replace("start: Greet", "start: 7"),
    "id: x\nspecVersion: '0.8'\nstates: []\n",
    "id: x\nspecVersion: '0.8'\nstart: A\nstates:\n  - {name: A, type: inject, data: {at: 2024-01-01}, end: true}\n",
])
def test_diagnostics_are_identical_with_and_without_the_fast_path(text: str) -> None:
    fast = check_workflow(text, source_name="w.yaml").diagnostics
    python_only = check_workflow(text, source_name="w.yaml", validator=workflow_validator()).diagnostics
    assert fast == python_only


def test_a_valid_document_never_imports_the_python_validator() -> None:
    import subprocess
    import sys

    code = ("import sys; from xflow_runtime.definition import check_workflow; "
            "r = check_workflow(sys.argv[1], source_name='w.yaml'); "
            "print(len(r.errors), 'jsonschema' in sys.modules, 'referencing' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, BASE], capture_output=True, text=True, cwd=REPO, check=True)
    assert done.stdout.split() == ["0", "False", "False"]
