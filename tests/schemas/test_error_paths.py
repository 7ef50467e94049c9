"""Every error our schema reports points at a node that exists in the document, so the loader can
turn it into a line and column; checked on random mutants of 0.8 and xFlow documents."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.schemas.corpus import load_cases
from tests.schemas.strategies import JUNK, paths_of, mutants
from xflow_runtime.definition.schema_registry import workflow_validator

XFLOW_DOCUMENTS = [
    entry.values[0].get("document")
    or {"id": "t", "specVersion": "0.8", "states": [entry.values[0]["state"]]}
    for entry in load_cases("xflow-valid.yaml")
]


@st.composite
def xflow_mutants(draw: st.DrawFn) -> Any:
    document = copy.deepcopy(draw(st.sampled_from(XFLOW_DOCUMENTS)))
    path = draw(st.sampled_from([p for p in paths_of(document) if p]))
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    if draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(st.sampled_from(JUNK + ["token_window", "fallback", "relay", "${ . }"]))
    return document


def _exists(document: Any, path: list[Any]) -> bool:
    node = document
    for step in path:
        if isinstance(node, dict) and step in node:
            node = node[step]
        elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            node = node[step]
        else:
            return False
    return True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(mutants(), xflow_mutants()))
def test_every_error_points_at_an_existing_node(document: Any) -> None:
    for error in workflow_validator().iter_errors(document):
        assert _exists(document, list(error.absolute_path)), (error.json_path, error.message)
        assert error.message
