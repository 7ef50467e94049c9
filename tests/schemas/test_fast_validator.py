"""If the registry offers the compiled ``fast_workflow_validator`` (jsonschema-rs), its yes/no
verdict must equal the Python validator's on every corpus document and on random mutants: the
loader trusts it to skip the slow path."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.schemas.corpus import all_documents
from tests.schemas.strategies import mutants
from tests.schemas.test_error_paths import xflow_mutants
from xflow_runtime.definition import schema_registry


def _fast() -> Any:
    factory = getattr(schema_registry, "fast_workflow_validator", None)
    fast = factory() if factory else None
    if fast is None:
        pytest.skip("no compiled validator (fast_workflow_validator or jsonschema-rs) available")
    return fast


def test_fast_validator_agrees_on_the_corpus() -> None:
    fast, slow = _fast(), schema_registry.workflow_validator()
    documents = all_documents()
    assert len(documents) > 100
    for document in documents:
        assert fast.is_valid(document) == slow.is_valid(document), document


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(mutants(), xflow_mutants()))
def test_fast_validator_agrees_on_mutants(document: Any) -> None:
    assert _fast().is_valid(document) == schema_registry.workflow_validator().is_valid(document)
