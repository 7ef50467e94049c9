"""One catalogue of error codes (``xflow_runtime/error_codes.py``) and one list of history record
kinds (``xflow_runtime/interpreter/records.py``): values pinned (workflows and readers match on
them), and no call site spells one as a bare string."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

from xflow_runtime import error_codes
from xflow_runtime.interpreter import records

PACKAGE = Path(__file__).resolve().parents[2] / "xflow_runtime"

#: The published values: changing one breaks workflows that match on it.
PUBLISHED = {
    "TIMEOUT": "timeout", "INVALID_INPUT": "invalidInput", "VALIDATION": "validation",
    "INVALID_INPUT_COLLECTION": "invalidInputCollection", "UNSUPPORTED_STATE": "unsupportedState",
    "SUBFLOW_NOT_FOUND": "subflowNotFound", "FUNCTION_NOT_IMPLEMENTED": "functionNotImplemented",
    "NO_CONDITION_MATCHED": "NoConditionMatched", "ERROR_MESSAGE": "errorMessage", "STALLED": "stalled",
    "PROCESS_CRASHED": "ProcessCrashed", "FUNCTION_NOT_FOUND": "FunctionNotFound",
    "INVALID_ARGUMENTS": "InvalidArguments", "INVALID_RESULT": "InvalidResult",
    "CONFIGURATION_ERROR": "ConfigurationError", "NOT_SUPPORTED": "NotSupported", "AUTH_ERROR": "AuthError",
    "CONNECT_ERROR": "ConnectError", "GRAPHQL_ERROR": "GraphQLError", "CONNECTION": "connection",
    "AGENT_NO_OUTCOME": "AgentNoOutcome", "AGENT_OUTPUT_INVALID": "AgentOutputInvalid",
    "AGENT_MESSAGE_INVALID": "AgentMessageInvalid", "AGENT_KNOWN_DATA_INVALID": "AgentKnownDataInvalid",
    "AGENT_OUTCOME_DATA_INVALID": "AgentOutcomeDataInvalid", "AGENT_PROXY_NO_RESULT": "AgentProxyNoResult",
    "LONG_TERM_MEMORY_UNAVAILABLE": "LongTermMemoryUnavailable", "TEMPLATE_ERROR": "TemplateError",
    "TEMPLATE_SECURITY_ERROR": "TemplateSecurityError", "TASK_INVALID": "TaskInvalid",
    "TASK_DATA_INVALID": "TaskDataInvalid", "TASK_NO_OUTCOME": "TaskNoOutcome", "TASK_DELETED": "taskDeleted",
    "AGENT_PROXY_NO_CALLBACK": "AgentProxyNoCallback",
    "MCP_TOOL_ERROR": "MCPToolError", "MCP_PROTOCOL_ERROR": "MCPProtocolError", "MCP_TIMEOUT": "MCPTimeout",
    "MCP_UNAVAILABLE": "MCPUnavailable", "MCP_OUTPUT_INVALID": "MCPOutputInvalid",
    "MCP_INPUT_REQUIRED": "MCPInputRequired", "MCP_NOT_INSTALLED": "MCPNotInstalled",
    "MCP_UNAUTHORIZED": "MCPUnauthorized", "MCP_TOOL_NOT_FOUND": "MCPToolNotFound",
    "A2A_TASK_FAILED": "A2ATaskFailed", "A2A_TASK_REJECTED": "A2ATaskRejected", "A2A_TASK_CANCELED": "A2ATaskCanceled",
    "A2A_AUTH_REQUIRED": "A2AAuthRequired", "A2A_INPUT_REQUIRED": "A2AInputRequired",
    "A2A_PROTOCOL_ERROR": "A2AProtocolError", "A2A_UNAVAILABLE": "A2AUnavailable",
    "A2A_PUSH_UNAVAILABLE": "A2APushUnavailable", "A2A_NOT_INSTALLED": "A2ANotInstalled",
}


def test_the_catalogue_keeps_every_published_value_once() -> None:
    assert error_codes.catalogue() == PUBLISHED
    values = list(PUBLISHED.values())
    assert len(values) == len(set(values))  # no code under two names


#: The stored record kinds: the CLI, the service's event stream and ``xflow show`` read them.
RECORDED = {
    "workflow_started", "workflow_completed", "workflow_failed", "secrets_missing", "input_validation_warning",
    "output_validation_warning", "state_entered", "state_exited", "state_failed", "compensation_started",
    "event_produced", "event_consumed", "event_timeout", "action_skipped", "action_retry", "async_action_failed",
    "llm_call", "agent_reply", "tool_call", "memory_read", "memory_write", "agent_proxy_waiting",
    "agent_proxy_event_ignored", "a2a_call", "a2a_task", "a2a_task_read", "a2a_callback_ignored", "a2a_call_ended",
    "mcp_tool_skipped",
    "task_created", "task_completed", "task_deleted", "task_timedOut", "task_event_ignored",
}


def test_record_kinds_are_one_list() -> None:
    constants = {value for name, value in vars(records).items() if name.isupper() and isinstance(value, str)}
    assert constants == set(records.KINDS) == set(typing.get_args(records.RecordKind)) == RECORDED


def bare_strings(source: str) -> list[tuple[int, str]]:
    """``code="…"`` keywords and ``record("…")`` calls spelled with a string literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg == "code" and isinstance(keyword.value, ast.Constant) \
                    and isinstance(keyword.value.value, str):
                found.append((node.lineno, f"code={keyword.value.value!r}"))
        if (isinstance(node.func, ast.Attribute) and node.func.attr == "record" and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append((node.lineno, f"record({node.args[0].value!r})"))
    return found


def test_no_call_site_spells_a_code_or_a_record_kind() -> None:
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "service":  # problem types (RFC 9457), not error codes
            continue
        for line, what in bare_strings(path.read_text(encoding="utf-8")):
            problems.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {what}")
    assert problems == []


def test_the_reader_finds_bare_strings() -> None:
    source = 'raise WorkflowError("x", code="Boom")\nrun.record("state_entered", a=1)\nrun.record(KIND)\n'
    assert sorted(bare_strings(source)) == [(1, "code='Boom'"), (2, "record('state_entered')")]
