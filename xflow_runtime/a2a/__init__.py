"""Agent2Agent (A2A 1.0): reaching remote agents from ``aiagentproxy`` states and ``type: a2a``
functions, and (``xflow serve --a2a``) serving agent workflows as A2A agents (specs/a2a.md).

Nothing here imports ``a2a-sdk`` (the optional extra ``[a2a]``); :mod:`xflow_runtime.a2a.wire`
does, when the first A2A call is made."""

from __future__ import annotations

#: Error codes (``onErrors`` can match them; specs/a2a.md §4), from the one catalogue.
from xflow_runtime.error_codes import A2A_AUTH_REQUIRED as AUTH_REQUIRED  # noqa: E402
from xflow_runtime.error_codes import A2A_INPUT_REQUIRED as INPUT_REQUIRED  # noqa: E402
from xflow_runtime.error_codes import A2A_NOT_INSTALLED as NOT_INSTALLED  # noqa: E402
from xflow_runtime.error_codes import A2A_PROTOCOL_ERROR as PROTOCOL_ERROR  # noqa: E402
from xflow_runtime.error_codes import A2A_PUSH_UNAVAILABLE as PUSH_UNAVAILABLE  # noqa: E402
from xflow_runtime.error_codes import A2A_TASK_CANCELED as TASK_CANCELED  # noqa: E402
from xflow_runtime.error_codes import A2A_TASK_FAILED as TASK_FAILED  # noqa: E402
from xflow_runtime.error_codes import A2A_TASK_REJECTED as TASK_REJECTED  # noqa: E402
from xflow_runtime.error_codes import A2A_UNAVAILABLE as UNAVAILABLE  # noqa: E402

#: How an ``aiagentproxy`` waits for the remote task (``execution.mode``).
MODES = ("blocking", "push", "poll")


def callback_topic(call_id: str) -> str:
    """The durable topic a push callback for call ``call_id`` is delivered on."""
    return f"a2a:{call_id}"

__all__ = ["AUTH_REQUIRED", "INPUT_REQUIRED", "MODES", "NOT_INSTALLED", "PROTOCOL_ERROR", "PUSH_UNAVAILABLE",
           "TASK_CANCELED", "TASK_FAILED", "TASK_REJECTED", "UNAVAILABLE", "callback_topic"]
