"""Everything the memory store holds about one user of a tenant, as JSON-able data (the memory
part of ``xflow memory export-user``; synchronous SQL on an open connection).

Across every agent: the user's chats with their messages, agent memories and facts kept for the
user, consent, and extraction jobs (with the copy of the conversation a job still holds).
"""

from __future__ import annotations

import typing
from typing import Any

from sqlalchemy import Connection, Table, select

from xflow_runtime.memory.chat import repository as chats
from xflow_runtime.memory.longterm import privacy
from xflow_runtime.memory.longterm.repository import MEMORY_COLUMNS, memories, to_memory
from xflow_runtime.storage.longterm_models import ExtractionJobRow

_jobs = typing.cast(Table, ExtractionJobRow.__table__)  # a declarative model\'s table (typed FromClause)


def export_memory(connection: Connection, tenant: str, user: str) -> dict[str, Any]:
    consent, _ = privacy.read_subject(connection, tenant, user)
    listed = chats.list_chats(connection, tenant, user, None, None)
    chat_items = [{
        "id": chat.id, "agent": chat.agent, "memory_id": chat.memory_id or None, "title": chat.title,
        "created_at": chat.created_at.isoformat(), "updated_at": chat.updated_at.isoformat(),
        "messages": [{"role": row.role, **row.parts} for row in chats.chat_messages(connection, chat)],
    } for chat in listed]
    rows = connection.execute(select(memories.c.agent_id, *MEMORY_COLUMNS)
                              .where(memories.c.tenant_id == tenant, memories.c.user_id == user)
                              .order_by(memories.c.created_at, memories.c.id)).all()
    kept = {"memory": [], "fact": []}  # type: dict[str, list[dict[str, Any]]]
    for row in rows:
        kept[row.kind].append({"agent": row.agent_id, **to_memory(row).to_dict()})
    jobs = connection.execute(select(_jobs.c.id, _jobs.c.agent_id, _jobs.c.status, _jobs.c.messages,
                                     _jobs.c.created_at)
                              .where(_jobs.c.tenant_id == tenant, _jobs.c.user_id == user)
                              .order_by(_jobs.c.created_at, _jobs.c.id)).all()
    return {
        "consent": {True: "allowed", False: "refused", None: "unset"}[consent],
        "chats": chat_items,
        "memories": kept["memory"],
        "facts": kept["fact"],
        "extraction_jobs": [{"id": job.id, "agent": job.agent_id, "status": job.status,
                             "messages": job.messages or [], "created_at": _iso(job.created_at)}
                            for job in jobs],
    }


def _iso(moment: Any) -> str | None:
    return None if moment is None else moment.isoformat()
