"""Fixtures of the integration tests: the recording HTTP server of tests/functions, and an LLM
configuration pointing a Runtime at the scripted model server."""

from __future__ import annotations

import pytest

from tests.functions.conftest import server  # noqa: F401  (the recording HTTP server fixture)
from xflow_runtime.llm.client import LLMSettings


@pytest.fixture
def llm(scripted_model) -> LLMSettings:
    return LLMSettings(api_base=scripted_model.api_base, api_key="scripted")
