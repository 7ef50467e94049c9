"""How instances look on the wire. Pure functions over the runtime's rows and descriptions.

Statuses (SW vocabulary): ``running``, ``waiting`` (``waiting_for: "message"``: an agent answered
and waits for the next user message), ``completed``, ``failed``, ``cancelled``."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Mapping

from xflow_runtime.service.problems import Problem

if TYPE_CHECKING:
    from xflow_runtime.engine.durable.instance_keys import InstanceCounts

_STATUSES = {"PENDING": "running", "ENQUEUED": "running", "SUCCESS": "completed", "ERROR": "failed",
             "CANCELLED": "cancelled", "MAX_RECOVERY_ATTEMPTS_EXCEEDED": "failed"}
STATUSES = ("running", "waiting", "completed", "failed", "cancelled")
TERMINAL = ("completed", "failed", "cancelled")


#: Latest records that say more than an engine status of running (they come before the status row).
AHEAD_OF_ENGINE = {"agent_reply": "waiting", "workflow_completed": "completed", "workflow_failed": "failed"}


def status_of(row: Mapping[str, Any], last_event: str | None) -> str:
    """The status an instance shows: its engine status, unless that says running and its latest
    record (``last_event``) says more (the one rule; lists and the metrics count by it too)."""
    status = _STATUSES.get(str(row.get("status")), "running")
    if status == "running":
        return AHEAD_OF_ENGINE.get(last_event or "", "running")
    return status


def visible_counts(counts: "InstanceCounts", last_events: Mapping[str, str]) -> dict[str, int]:
    """How many instances show each status, as :func:`status_of` shows each one: ``counts`` holds
    every instance by engine status, and the engine status of those whose latest record is in
    ``last_events`` (the only ones whose shown status may differ from their engine status's)."""
    shown = dict.fromkeys(STATUSES, 0)
    for status, count in counts.by_status.items():
        shown[status_of({"status": status}, None)] += count
    for instance_id, status in counts.of.items():
        row = {"status": status}
        shown[status_of(row, None)] -= 1
        shown[status_of(row, last_events.get(instance_id))] += 1
    return shown


def _time(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat().replace("+00:00", "Z")


def instance_summary(row: Mapping[str, Any], last_event: str | None, base: str) -> dict[str, Any]:
    status = status_of(row, last_event)
    instance_id = row["instance_id"]
    return {
        "id": instance_id,
        "workflow": row.get("workflow"),
        "status": status,
        "waiting_for": "message" if status == "waiting" else None,
        "user": row.get("user"),
        "labels": {k: v for k, v in (row.get("labels") or {}).items() if not k.startswith("xflow.")},
        "created_at": _time(row.get("created_at")),
        "updated_at": _time(row.get("updated_at")),
        "links": {"self": f"{base}/v1/instances/{instance_id}", "history": f"{base}/v1/instances/{instance_id}/history",
                  "stream": f"{base}/v1/instances/{instance_id}/stream",
                  "messages": f"{base}/v1/instances/{instance_id}/messages"},
    }


def instance_detail(row: Mapping[str, Any], described: Mapping[str, Any], last_event: str | None,
                    base: str) -> dict[str, Any]:
    view = instance_summary(row, last_event, base)
    states = described.get("states") or []
    view.update({
        "input": described.get("input"),
        "output": described.get("output") if view["status"] == "completed" else None,
        "error": _public_error(described.get("error")) if view["status"] == "failed" else None,
        "current_state": states[-1].get("state") if states and view["status"] in ("running", "waiting") else None,
        "usage": described.get("usage"),
    })
    return view


def _public_error(error: Any) -> Any:
    if isinstance(error, Mapping):
        return {k: error.get(k) for k in ("name", "code", "message", "status") if k in error}
    return None if error is None else {"message": str(error)}


# --- cursors ------------------------------------------------------------------------------------
def filter_key(filters: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(filters, sort_keys=True).encode()).hexdigest()[:12]


def encode_cursor(created_at: float, instance_id: str, filters: Mapping[str, Any]) -> str:
    raw = json.dumps([created_at, instance_id, filter_key(filters)], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, filters: Mapping[str, Any]) -> tuple[float, str]:
    """(created_at, id) after which the next page starts. A cursor made for other filters, or
    not made by us, is a 400."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created_at, instance_id, key = json.loads(raw)
        if not isinstance(created_at, (int, float)) or not isinstance(instance_id, str) or key != filter_key(filters):
            raise ValueError
    except (ValueError, TypeError):
        raise Problem("invalid-cursor", "the cursor is not one this list returned for these filters") from None
    return float(created_at), instance_id
