"""Exporting everything stored about a user (GDPR art. 15 and 20) as one JSON document.

    document = await export_user("u-1", tenant="acme")   # the stores of $XFLOW_DATABASE_URL

Same stores as erasure (:func:`xflow_runtime.settings.locate`): from memory the user's chats with
their messages, memories and facts, consent and extraction jobs; from the durable store the
user's instances with input, output, error and history. A store that does not exist contributes
nothing (``present: false``); nothing is created. After an erasure the export is empty.
"""

from __future__ import annotations

import asyncio
from typing import Any

from xflow_runtime.privacy.erasure import check_subject
from xflow_runtime.settings import StoreLocations, locate, redact

#: Version of the document's layout.
EXPORT_FORMAT = 1


async def export_user(user: str, *, tenant: str = "default", database_url: str | None = None) -> dict[str, Any]:
    """One JSON-able document of everything stored about ``user`` in ``tenant``."""
    check_subject(tenant, user)
    return await asyncio.to_thread(_export, locate(database_url), tenant, user)


def is_empty(document: dict[str, Any]) -> bool:
    """Whether an export holds nothing about the user (consent unset, no rows, no instances)."""
    memory = document["memory"]
    return (memory.get("consent", "unset") == "unset" and not document["instances"]
            and not any(memory.get(part) for part in ("chats", "memories", "facts", "extraction_jobs")))


def _export(where: StoreLocations, tenant: str, user: str) -> dict[str, Any]:
    from xflow_runtime.engine.durable.subjects import DurableSubjects
    from xflow_runtime.memory.subject_export import export_memory
    from xflow_runtime.storage.database import open_existing_database

    engine = open_existing_database(where.memory_url)
    memory: dict[str, Any] = {"location": redact(where.memory_url), "present": engine is not None}
    if engine is not None:
        try:
            with engine.connect() as connection:
                memory.update(export_memory(connection, tenant, user))
                connection.rollback()
        finally:
            engine.dispose()
    store = DurableSubjects(where.durable_url)
    try:
        present = store.present()
        instances = store.export(tenant, user) if present else []
    finally:
        store.close()
    return {"format": EXPORT_FORMAT, "tenant": tenant, "user": user, "memory": memory,
            "durable": {"location": store.display_url, "present": present}, "instances": instances}
