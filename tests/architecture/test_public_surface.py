"""The public surface (specs/architecture.md, "Public and internal"): the top level's and each
subpackage's ``__all__``. A name added or removed here is a decision about the public API; the
test fails until this list says so. Everything else is internal and may change without notice."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import xflow_runtime

PACKAGE = Path(xflow_runtime.__file__).resolve().parent

PUBLIC: dict[str, set[str]] = {
    "xflow_runtime": {
        'ChatMemory', 'ChatScope', 'DefinitionError', 'Diagnostic', 'EvaluationLimits',
        'ExecutionResult', 'ExpressionError', 'FunctionContext', 'FunctionRegistry',
        'HttpSettings', 'InstanceHandle', 'LoadedWorkflow', 'LongTermMemory', 'LongTermOptions',
        'MemoryScope', 'Runtime', 'UnknownInstance', 'UserErasureReceipt', 'WindowPolicy',
        'WorkflowError', 'WorkflowFailed', 'WorkflowPlan', 'XFlowError', '__version__',
        'compile_plan', 'erase_user', 'export_user', 'load_workflow', 'run_sync', 'run_workflow',
    },
    "xflow_runtime.a2a": {
        'AUTH_REQUIRED', 'INPUT_REQUIRED', 'MODES', 'NOT_INSTALLED', 'PROTOCOL_ERROR', 'PUSH_UNAVAILABLE',
        'TASK_CANCELED', 'TASK_FAILED', 'TASK_REJECTED', 'UNAVAILABLE', 'callback_topic',
    },
    "xflow_runtime.agent": {
        'AGENT_REPLY', 'USER_MESSAGE_TOPIC',
    },
    "xflow_runtime.cli": set(),
    "xflow_runtime.definition": {
        'CODES', 'CheckResult', 'Diagnostic', 'LoadedWorkflow', 'build_plan', 'check_workflow',
        'load_workflow', 'validate_documents', 'validate_text',
    },
    "xflow_runtime.engine": {
        'EnginePort',
    },
    "xflow_runtime.expressions": {
        'CACHE', 'JqExpression', 'PENDING', 'STANDARD_VARIABLES', 'compile_expression', 'get_path',
        'interpolate', 'interpolate_async', 'is_expression', 'merge', 'merge_at_path', 'set_path',
        'strip_expression',
    },
    "xflow_runtime.functions": {
        'FunctionContext', 'FunctionRegistry', 'HttpSettings', 'invoke_function',
    },
    "xflow_runtime.interpreter": {
        'CacheKey', 'EVENT_TOPIC', 'ExecutionContext', 'ExecutionResult', 'Failure',
        'FunctionInvoker', 'Identity', 'InstanceServices', 'RecordKind', 'StateHandler',
        'StateRun', 'TIMEOUT', 'WorkflowRegistry', 'execute', 'register_state_handler',
        'run_workflow', 'run_workflow_sync',
    },
    "xflow_runtime.llm": {
        'ChatRequest', 'ChatResult', 'DEFAULT_AI_MODEL', 'LLMClient', 'LLMGroup', 'LLMNode',
        'LLMSettings', 'LLMTarget', 'PRESETS', 'compile_llm_config', 'node_for_ai_model',
    },
    "xflow_runtime.mcp": {
        'ERROR_CODES', 'INPUT_REQUIRED', 'NOT_INSTALLED', 'OUTPUT_INVALID', 'PROTOCOL_ERROR', 'TIMEOUT',
        'TOOL_ERROR', 'TOOL_NOT_FOUND', 'UNAUTHORIZED', 'UNAVAILABLE',
    },
    "xflow_runtime.memory": set(),
    "xflow_runtime.plan": {
        'CompileContext', 'WorkflowPlan', 'compile_plan', 'compile_state', 'parse_duration',
        'register_state_compiler',
    },
    "xflow_runtime.privacy": {
        'ErasureIncomplete', 'SUBJECT_ATTRIBUTE', 'StoreErasure', 'UserErasureReceipt', 'erase_user', 'export_user',
        'subject_key',
    },
    "xflow_runtime.runtime": {
        'EngineName', 'EventListener', 'InstanceHandle', 'Runtime', 'UnknownInstance',
        'WorkflowRef', 'run_sync',
    },
    "xflow_runtime.service": {
        'ServiceOptions', 'create_app', 'service_lifespan',
    },
    "xflow_runtime.storage": {
        'default_database_url', 'open_database', 'write_transaction',
    },
    "xflow_runtime.telemetry": {
        'CAPTURE_CONTENT_ENV', 'annotate_current_span', 'capture_content_from_env', 'inject_trace_context', 'resolve',
    },
    "xflow_runtime.testing": {
        'REDACTED', 'RecordedRequest', 'Reply', 'Rule', 'Script', 'ScriptError',
        'ScriptedModelServer', 'ScriptedToolCall', 'as_script', 'chat_contents', 'load_script',
    },
    "xflow_runtime.usertask": {
        'CLAIMED', 'COMPLETED', 'CREATED', 'DELETED', 'TASK_ID_ATTRIBUTE', 'TASK_KEY_ATTRIBUTE',
        'TIMED_OUT', 'UNCLAIMED',
    },
    "xflow_runtime.memory.chat": {
        'AppendResult', 'ChatInfo', 'ChatMemory', 'ChatMemoryError', 'ChatNotFound', 'ChatScope',
        'ChatWindow', 'DEFAULT_MAX_MESSAGES', 'DEFAULT_MAX_TOKENS', 'MemorySettings', 'ScopeMode',
        'Selection', 'TokenCounter', 'WindowKind', 'WindowPolicy', 'is_valid_window',
        'select_window', 'validate_turn',
    },
    "xflow_runtime.memory.longterm": {
        'DEFAULT_TEMPLATE', 'EmbeddingModes', 'ErasureReceipt', 'ExtractedFact',
        'FactExtractionSettings', 'LongTermMemory', 'LongTermMemoryError',
        'LongTermMemorySettings', 'LongTermOptions', 'Memory', 'MemoryConflict', 'MemoryNotFound',
        'MemoryPage', 'MemoryScope', 'ReindexReport', 'SearchHit', 'StepMemory', 'TOOL_NAMES',
        'TOOL_SCHEMAS', 'WriteResult', 'parse_facts', 'reciprocal_rank_fusion',
        'render_memory_block', 'with_memory_block',
    },
    "xflow_runtime.engine.durable": {
        'DurableEngine', 'DurableEngineError', 'DurablePort', 'ReplayDiverged',
        'resolve_database_url', 'stop_running_instances',
    },
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_the_public_surface_is_pinned_and_every_name_resolves(module: str) -> None:
    imported = importlib.import_module(module)
    assert set(imported.__all__) == PUBLIC[module]
    for name in imported.__all__:
        assert getattr(imported, name) is not None, f"{module}.{name}"


def test_every_subpackage_has_a_public_face() -> None:
    subpackages = {f"xflow_runtime.{path.parent.name}" for path in PACKAGE.glob("*/__init__.py")}
    assert subpackages <= set(PUBLIC)


def test_the_type_checking_mirror_matches_the_lazy_exports() -> None:
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    mirrored: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module
                mirrored.update({alias.name: statement.module for alias in statement.names})
    assert mirrored == xflow_runtime._EXPORTS  # noqa: SLF001 - the map the mirror must equal


def test_importing_the_package_stays_cheap() -> None:
    code = ("import sys, xflow_runtime; "
            "print(sorted(m for m in ('dbos', 'litellm', 'sqlalchemy', 'httpx') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=PACKAGE.parent)
    assert out.stdout.strip() == "[]"
