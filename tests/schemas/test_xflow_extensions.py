"""xFlow extension states (aiagent, aiagentproxy, userproxyagent, usertask): accepted shapes, and
the exact JSON path of every error in the rejected ones."""

from __future__ import annotations

from typing import Any

import pytest

from tests.schemas.corpus import load_cases
from tests.schemas.validators import our_errors, ours_valid

NEXT_STATE = {"name": "next", "type": "inject", "data": {}, "end": True}


def document_of(entry: dict[str, Any]) -> Any:
    if "document" in entry:
        return entry["document"]
    return {"id": "t", "specVersion": "0.8", "states": [entry["state"], NEXT_STATE]}


@pytest.mark.parametrize("entry", load_cases("xflow-valid.yaml"))
def test_xflow_documents_are_valid(entry: dict[str, Any]) -> None:
    assert our_errors(document_of(entry)) == []


@pytest.mark.parametrize("entry", load_cases("xflow-invalid.yaml"))
def test_xflow_mistakes_are_reported_at_their_exact_path(entry: dict[str, Any]) -> None:
    errors = our_errors(document_of(entry))
    assert {path for path, _ in errors} == set(entry["paths"]), errors


def test_error_messages_name_the_missing_fields() -> None:
    state = {"name": "a", "type": "aiagent", "transition": "next"}
    messages = {message for _, message in our_errors(document_of({"state": state}))}
    assert messages == {f"'{field}' is a required property"
                        for field in ("agentName", "userMessage")}


def test_a_minimal_agent_needs_no_output_and_no_outcomes_but_an_exit() -> None:
    # specs/agent.md §1: `output` and `agentOutcomes` have documented defaults, so the schema
    # does not require them; without outcomes the state's own transition/end is the only exit.
    minimal = {"name": "a", "type": "aiagent", "agentName": "x", "userMessage": "hi"}
    assert ours_valid(document_of({"state": {**minimal, "transition": "next"}}))
    assert ours_valid(document_of({"state": {**minimal, "end": True}}))
    assert not ours_valid(document_of({"state": minimal}))
    assert ours_valid(document_of({"state": {**minimal, "agentOutcomes": [{"finish": True, "transition": "next"}]}}))


def test_rule_errors_carry_a_description_for_diagnostics() -> None:
    from xflow_runtime.definition.schema_registry import workflow_validator

    state = {"name": "a", "type": "aiagent", "agentName": "x", "userMessage": "hi", "output": {},
             "agentOutcomes": [{}], "memory": {"memoryType": "token_window"}}
    [error] = workflow_validator().iter_errors(document_of({"state": state}))
    assert error.json_path == "$.states[0].memory"
    assert error.message == "'maxTokens' is a required property"
    assert error.schema["description"] == "`memoryType: token_window` needs `maxTokens`."


def test_agent_state_without_any_exit_is_accepted() -> None:
    # Agent states may leave through their outcomes only (specs/schemas.md, decision 9).
    state = {"name": "a", "type": "aiagent", "agentName": "x", "userMessage": "hi", "output": {},
             "agentOutcomes": [{"finish": True}]}
    assert ours_valid(document_of({"state": state}))
