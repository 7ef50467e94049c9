"""How an instance looks as an A2A task, and how an A2A message becomes an instance's input
(specs/a2a.md §5). Pure: JSON in, A2A JSON (the protobuf JSON form) out.

- task id = instance id; ``contextId`` = the one the client sent with its first message (else
  the instance id), recorded as the instance's label ``a2a.context``;
- status: running → ``TASK_STATE_WORKING``; waiting for a user message (the latest record is an
  ``agent_reply``) → ``TASK_STATE_INPUT_REQUIRED`` with the reply as the agent's message;
  completed → ``TASK_STATE_COMPLETED`` with one artifact ``output`` (the output as a data part,
  plus its ``response`` as a text part when that is a string); failed → ``TASK_STATE_FAILED``
  with the error's message; cancelled → ``TASK_STATE_CANCELED``.
- input: the data parts of the message merged (objects key by key; a non-object one under
  ``data``), and the text parts joined under ``message`` when there are any."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from xflow_runtime.a2a.outcome import split_parts

#: The workflow metadata key that exposes a workflow over ``xflow serve --a2a``.
EXPOSE_KEY = "xflow.a2a.expose"
CONTEXT_LABEL = "a2a.context"
_TASKS = uuid.UUID("5a2a7a5c-0d1e-4b8f-a3c2-9e0f1d2c3b4a")
STATES = {"running": "TASK_STATE_WORKING", "waiting": "TASK_STATE_INPUT_REQUIRED",
          "completed": "TASK_STATE_COMPLETED", "failed": "TASK_STATE_FAILED", "cancelled": "TASK_STATE_CANCELED"}
SETTLED = ("waiting", "completed", "failed", "cancelled")


def exposed(metadata: Mapping[str, Any]) -> bool:
    value = metadata.get(EXPOSE_KEY)
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def task_id_for(tenant: str, user: str | None, workflow_id: str, message_id: str) -> str:
    """The instance a message starts: the same message (id) sent again is the same task."""
    return str(uuid.uuid5(_TASKS, "\n".join((tenant, user or "", workflow_id, message_id))))


def input_of(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    values, text = split_parts(list(parts))
    return {**values, "message": text} if text else values


def message_text(parts: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(str(part["text"]) for part in parts if "text" in part)


def task_json(row: Mapping[str, Any], status: str, described: Mapping[str, Any],
              reply: str | None) -> dict[str, Any]:
    """The Task of an instance (``status`` from ``views.status_of``; ``reply`` the latest agent
    reply when it waits for a message)."""
    task_id = row["instance_id"]
    context_id = (row.get("labels") or {}).get(CONTEXT_LABEL) or task_id
    state = STATES.get(status, "TASK_STATE_WORKING")
    task_status: dict[str, Any] = {"state": state, "timestamp": _time(row.get("updated_at"))}
    text = None
    if status == "waiting":
        text = reply or ""
    elif status == "failed":
        error = described.get("error") or {}
        text = str(error.get("message") or error.get("code") or "the workflow failed")
    if text is not None:
        task_status["message"] = {"messageId": str(uuid.uuid5(_TASKS, f"{task_id}/{row.get('updated_at')}")),
                                  "role": "ROLE_AGENT", "taskId": task_id, "contextId": context_id,
                                  "parts": [{"text": text}]}
    task: dict[str, Any] = {"id": task_id, "contextId": context_id, "status": task_status}
    if status == "completed":
        task["artifacts"] = [artifact_json(described.get("output"))]
    return task


def artifact_json(output: Any) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"data": output}]
    if isinstance(output, Mapping) and isinstance(output.get("response"), str):
        parts.append({"text": output["response"]})
    return {"artifactId": "output", "name": "output", "parts": parts}


def _time(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)):
        seconds = datetime.now(timezone.utc).timestamp()
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat().replace("+00:00", "Z")
