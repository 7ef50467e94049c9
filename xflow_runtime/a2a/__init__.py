"""Agent2Agent (A2A 1.0): reaching remote agents from ``aiagentproxy`` states and ``type: a2a``
functions, and (``xflow serve --a2a``) serving agent workflows as A2A agents (specs/a2a.md).

Nothing here imports ``a2a-sdk`` (the optional extra ``[a2a]``); :mod:`xflow_runtime.a2a.wire`
does, when the first A2A call is made."""

from __future__ import annotations

#: Error codes (``onErrors`` can match them); documented in specs/a2a.md §4.
TASK_FAILED = "A2ATaskFailed"
TASK_REJECTED = "A2ATaskRejected"
TASK_CANCELED = "A2ATaskCanceled"
AUTH_REQUIRED = "A2AAuthRequired"
INPUT_REQUIRED = "A2AInputRequired"
PROTOCOL_ERROR = "A2AProtocolError"
UNAVAILABLE = "A2AUnavailable"
PUSH_UNAVAILABLE = "A2APushUnavailable"
NOT_INSTALLED = "A2ANotInstalled"

#: How an ``aiagentproxy`` waits for the remote task (``execution.mode``).
MODES = ("blocking", "push", "poll")


def callback_topic(call_id: str) -> str:
    """The durable topic a push callback for call ``call_id`` is delivered on."""
    return f"a2a:{call_id}"
