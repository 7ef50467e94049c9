"""A2A task → ``$agentOutcome`` (specs/a2a.md §4). Pure: works on the JSON form of the SDK's
protobuf messages (``MessageToDict``), which is also what the recorded steps hold.

- ``TASK_STATE_COMPLETED`` (or a direct ``Message`` reply) → ``returnValues`` = the artifacts' data
  parts merged (objects key by key, in order; a non-object data part lands under ``data``), plus
  ``response`` = their text parts joined when there are any; ``log`` = that text (else the JSON).
- ``TASK_STATE_INPUT_REQUIRED`` → ``status: "input-required"``, ``log`` = the agent's question,
  ``returnValues`` = ``{question, …data parts of the status message}``: routable by outcomes.
- failed / rejected / canceled / auth-required → :class:`WorkflowError` with a documented code.
- submitted / working → not an outcome yet (:func:`is_settled` says whether to keep waiting).

``google.protobuf.Value`` carries every number as a double; whole numbers come back as ints."""

from __future__ import annotations

import json
from typing import Any, Mapping

from xflow_runtime import a2a as codes
from xflow_runtime.errors import WorkflowError

COMPLETED, INPUT = "TASK_STATE_COMPLETED", "TASK_STATE_INPUT_REQUIRED"
_ERRORS = {"TASK_STATE_FAILED": codes.TASK_FAILED, "TASK_STATE_REJECTED": codes.TASK_REJECTED,
           "TASK_STATE_CANCELED": codes.TASK_CANCELED, "TASK_STATE_AUTH_REQUIRED": codes.AUTH_REQUIRED}
#: States after which the task changes no more without us (terminal or interrupted).
SETTLED = frozenset({COMPLETED, INPUT, *_ERRORS})
STATUS_NAMES = {COMPLETED: "completed", INPUT: "input-required", "TASK_STATE_FAILED": "failed",
                "TASK_STATE_REJECTED": "rejected", "TASK_STATE_CANCELED": "canceled",
                "TASK_STATE_AUTH_REQUIRED": "auth-required", "TASK_STATE_WORKING": "working",
                "TASK_STATE_SUBMITTED": "submitted"}


def task_state(reply: Mapping[str, Any]) -> str:
    """The state of a ``{task: …}`` / ``{message: …}`` reply (a message is a completed answer)."""
    if "message" in reply and "task" not in reply:
        return COMPLETED
    return str(((reply.get("task") or {}).get("status") or {}).get("state") or "TASK_STATE_UNSPECIFIED")


def is_settled(reply: Mapping[str, Any]) -> bool:
    return task_state(reply) in SETTLED


def agent_outcome(agent: str, reply: Mapping[str, Any]) -> dict[str, Any]:
    """``$agentOutcome`` of a settled reply; an error for the states that are failures."""
    state = task_state(reply)
    task = reply.get("task") or {}
    ids = {"taskId": task.get("id"), "contextId": task.get("contextId") or (reply.get("message") or {}).get("contextId")}
    if state == COMPLETED:
        parts = [part for artifact in task.get("artifacts") or () for part in artifact.get("parts") or ()]
        if "message" in reply and "task" not in reply:
            parts = list(reply["message"].get("parts") or ())
        elif not parts:
            parts = list(((task.get("status") or {}).get("message") or {}).get("parts") or ())
        values, text = split_parts(parts)
        if text:
            values.setdefault("response", text)
        return {"returnValues": values, "log": text or json.dumps(values, sort_keys=True),
                "status": "completed", **ids}
    message_parts = list(((task.get("status") or {}).get("message") or {}).get("parts") or ())
    values, text = split_parts(message_parts)
    if state == INPUT:
        return {"returnValues": {"question": text, **values}, "log": text, "status": "input-required", **ids}
    if state in _ERRORS:
        raise WorkflowError(f"agent '{agent}': the A2A task ended {STATUS_NAMES[state]}"
                            + (f": {text}" if text else ""), code=_ERRORS[state],
                            details={"taskId": ids["taskId"], "contextId": ids["contextId"], "message": text})
    raise WorkflowError(f"agent '{agent}': the A2A task is still {STATUS_NAMES.get(state, state)}",
                        code=codes.PROTOCOL_ERROR, details={"taskId": ids["taskId"]})


def split_parts(parts: list[Mapping[str, Any]]) -> tuple[dict[str, Any], str]:
    """(the data parts merged — objects key by key, a non-object under ``data``, URL parts under
    ``files`` — and the text parts joined by newlines)."""
    values: dict[str, Any] = {}
    texts: list[str] = []
    for part in parts:
        if "text" in part:
            texts.append(str(part["text"]))
        elif "data" in part:
            data = whole_numbers(part["data"])
            if isinstance(data, dict):
                values.update(data)
            else:
                values["data"] = data
        elif "url" in part:
            values.setdefault("files", []).append({"url": part["url"], "mediaType": part.get("mediaType"),
                                                   "filename": part.get("filename")})
    return values, "\n".join(texts)


def whole_numbers(value: Any) -> Any:
    """Floats that are whole numbers become ints again (``Value`` stores every number as a double)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 53:
        return int(value)
    if isinstance(value, dict):
        return {key: whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [whole_numbers(item) for item in value]
    return value
