"""``GET /v1/instances``: one page of the caller's instances, read by the runtime's indexed query
(:meth:`~xflow_runtime.runtime.Runtime.find_instances`), with the status the wire shows.

The status on the wire is the engine's, corrected by the latest record this process's hub saw
(``views.status_of``), so a status filter asks the database for a superset and keeps the rows
whose visible status matches: ``cancelled`` is exact in SQL; ``completed``/``failed`` are the
engine's final statuses plus the few instances the hub saw end (:meth:`LiveHub.ended_here`);
``waiting`` the unsettled rows among those whose latest record here says so; ``running`` the
unsettled rows but those whose latest record here says more (:data:`~.views.AHEAD_OF_ENGINE`).
Rows are read page by page (a growing batch) until the page is full: a row whose status changed
meanwhile is skipped. Cursors are the ones the list always made (``views.encode_cursor``)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from xflow_runtime.engine.durable.instance_keys import InstanceQuery
from xflow_runtime.service.views import AHEAD_OF_ENGINE, encode_cursor, instance_summary

if TYPE_CHECKING:
    from xflow_runtime.service.live import LiveHub
    from xflow_runtime.service.principal import Principal
    from xflow_runtime.service.state import ServiceState

#: The most rows one query of a status-filtered list reads.
MAX_BATCH = 1000
#: The most instance ids one query binds (SQLite allows 32,766 variables a statement).
MAX_IDS = 10_000


def status_condition(status: str | None, hub: "LiveHub", max_ids: int = MAX_IDS) -> dict[str, Any]:
    """The :class:`InstanceQuery` fields of a visible status: a superset, checked row by row after.
    More than ``max_ids`` instances the hub knows more about: every unsettled row for running/waiting."""
    if status is None:
        return {}
    if status == "cancelled":
        return {"statuses": ("CANCELLED",)}
    if status == "completed":
        return {"statuses": ("SUCCESS",), "unsettled_ids": tuple(hub.ended_here("workflow_completed"))}
    if status == "failed":
        return {"statuses": ("ERROR", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"),
                "unsettled_ids": tuple(hub.ended_here("workflow_failed"))}
    ahead = hub.latest_events(AHEAD_OF_ENGINE)
    if len(ahead) > max_ids:  # more than one query binds: every unsettled row, checked one by one
        return {"statuses": (), "unsettled": True}
    if status == "waiting":
        return {"statuses": (), "unsettled_ids": tuple(i for i, event in ahead.items()
                                                       if AHEAD_OF_ENGINE[event] == "waiting")}
    return {"statuses": (), "unsettled": True, "except_ids": tuple(ahead)}  # running


async def list_page(state: "ServiceState", principal: "Principal", filters: dict[str, Any],
                    after: tuple[float, str] | None, limit: int, base: str,
                    max_ids: int = MAX_IDS) -> tuple[list[dict[str, Any]], str | None]:
    """``(items, next_cursor)`` of one page; ``filters`` as the route binds its cursors to
    (``max_ids``: as :func:`status_condition`; the bench's baseline passes 0)."""
    if principal.role == "user" and principal.user is None:
        return [], None  # a user credential without a user sees nothing
    status = filters["status"]
    batch = limit + 1
    query = InstanceQuery(tenant=principal.tenant, limit=batch, user=filters["user"], workflow=filters["workflow"],
                          started_from=filters["started_after"], started_before=filters["started_before"],
                          after=after, **status_condition(status, state.hub, max_ids))
    items: list[dict[str, Any]] = []
    while True:
        rows = await state.runtime.find_instances(query)
        for row in rows:
            view = instance_summary(row, state.hub.last_event(row["instance_id"]), base)
            if status is not None and view["status"] != status:
                continue
            if len(items) == limit:
                last = items[-1]
                cursor = encode_cursor(last["_created"], last["id"], filters)
                return _public(items), cursor
            items.append({**view, "_created": row.get("created_at") or 0.0})
        if len(rows) < query.limit or not rows:
            return _public(items), None
        batch = min(batch * 2, MAX_BATCH)
        query = replace(query, limit=batch, after=(rows[-1].get("created_at") or 0.0, rows[-1]["instance_id"]))


def _public(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for item in items:
        item.pop("_created")
    return items
