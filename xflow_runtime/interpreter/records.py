"""The kinds of history record an instance reports (``run.record(kind, **fields)``), in one list.

A record is ``{"event": <kind>, "instance_id": …, **fields}``; :mod:`xflow_runtime.history`
stamps and stores it. The kinds are stored values (the CLI, the service's event stream and
``xflow show`` read them): never change one. Each constant is a plain ``str``, so a record reads
and serializes the same as it always did; :data:`RecordKind` lets a type checker refuse a kind
that is not listed here.
"""

from __future__ import annotations

from typing import Final, Literal

# --- the instance (interpreter/execute.py) -------------------------------------------------------
WORKFLOW_STARTED: Final = "workflow_started"
WORKFLOW_COMPLETED: Final = "workflow_completed"
WORKFLOW_FAILED: Final = "workflow_failed"
#: Secrets the workflow declares but the runtime does not have (names only).
SECRETS_MISSING: Final = "secrets_missing"

# --- states (interpreter/instance.py) ------------------------------------------------------------
STATE_ENTERED: Final = "state_entered"
STATE_EXITED: Final = "state_exited"
STATE_FAILED: Final = "state_failed"
COMPENSATION_STARTED: Final = "compensation_started"

#: The input or output does not match its schema and the schema only warns (``failOnValidationErrors: false``).
INPUT_VALIDATION_WARNING: Final = "input_validation_warning"
OUTPUT_VALIDATION_WARNING: Final = "output_validation_warning"

# --- events and actions (interpreter/instance.py, actions.py, states/) ----------------------------
EVENT_PRODUCED: Final = "event_produced"
EVENT_CONSUMED: Final = "event_consumed"
EVENT_TIMEOUT: Final = "event_timeout"
ACTION_SKIPPED: Final = "action_skipped"
ACTION_RETRY: Final = "action_retry"
ASYNC_ACTION_FAILED: Final = "async_action_failed"

# --- state types beyond SW 0.8 (agent/, usertask/) ------------------------------------------------
#: One LLM call of an AI state: ``{state, model, usage: {prompt_tokens, …, cost}}``.
LLM_CALL: Final = "llm_call"
#: An agent answered and waits for the next user message.
AGENT_REPLY: Final = "agent_reply"
#: One tool call of an agent turn: ``{state, step, tool, arguments, result | error}`` (values
#: longer than :data:`xflow_runtime.agent.tools.RECORDED_VALUE_CHARS` are cut, marked ``truncated``).
TOOL_CALL: Final = "tool_call"
#: The chat-memory window an agent turn was given: ``{state, turn, memory_id, messages}``.
MEMORY_READ: Final = "memory_read"
#: What an agent turn appended to chat memory: ``{state, turn, memory_id, messages}``.
MEMORY_WRITE: Final = "memory_write"
#: An asynchronous ``aiagentproxy`` agent acknowledged; the state waits for its callback.
AGENT_PROXY_WAITING: Final = "agent_proxy_waiting"
#: A wake-up of that wait whose request row still waits (anyone could have posted the event).
AGENT_PROXY_EVENT_IGNORED: Final = "agent_proxy_event_ignored"
#: A2A (specs/a2a.md): a call to an agent, the task it created, each read of it, a push callback
#: that did not concern the call, and the call's end.
A2A_CALL: Final = "a2a_call"
A2A_TASK: Final = "a2a_task"
A2A_TASK_READ: Final = "a2a_task_read"
A2A_CALLBACK_IGNORED: Final = "a2a_callback_ignored"
A2A_CALL_ENDED: Final = "a2a_call_ended"
#: An MCP server's tool not offered to an agent (its ``inputSchema`` is no valid JSON Schema).
MCP_TOOL_SKIPPED: Final = "mcp_tool_skipped"
TASK_CREATED: Final = "task_created"
#: How a user task ended (the kinds keep the spelling of the task's status).
TASK_COMPLETED: Final = "task_completed"
TASK_DELETED: Final = "task_deleted"
TASK_TIMED_OUT: Final = "task_timedOut"
#: An event about a user task that does not change it (the task row decides).
TASK_EVENT_IGNORED: Final = "task_event_ignored"

RecordKind = Literal[
    "workflow_started", "workflow_completed", "workflow_failed", "secrets_missing",
    "input_validation_warning", "output_validation_warning",
    "state_entered", "state_exited", "state_failed", "compensation_started",
    "event_produced", "event_consumed", "event_timeout", "action_skipped", "action_retry",
    "async_action_failed", "llm_call", "agent_reply", "tool_call", "memory_read", "memory_write",
    "agent_proxy_waiting", "agent_proxy_event_ignored", "a2a_call", "a2a_task", "a2a_task_read",
    "a2a_callback_ignored", "a2a_call_ended", "mcp_tool_skipped", "task_created", "task_completed", "task_deleted",
    "task_timedOut", "task_event_ignored",
]

#: Every kind above.
KINDS: Final = frozenset({
    WORKFLOW_STARTED, WORKFLOW_COMPLETED, WORKFLOW_FAILED, SECRETS_MISSING, INPUT_VALIDATION_WARNING,
    OUTPUT_VALIDATION_WARNING, STATE_ENTERED, STATE_EXITED,
    STATE_FAILED, COMPENSATION_STARTED, EVENT_PRODUCED, EVENT_CONSUMED, EVENT_TIMEOUT, ACTION_SKIPPED,
    ACTION_RETRY, ASYNC_ACTION_FAILED, LLM_CALL, AGENT_REPLY, TOOL_CALL, MEMORY_READ, MEMORY_WRITE,
    AGENT_PROXY_WAITING, AGENT_PROXY_EVENT_IGNORED, A2A_CALL, A2A_TASK, A2A_TASK_READ, A2A_CALLBACK_IGNORED,
    A2A_CALL_ENDED, MCP_TOOL_SKIPPED, TASK_CREATED, TASK_COMPLETED, TASK_DELETED, TASK_TIMED_OUT, TASK_EVENT_IGNORED,
})
