"""Consent and erasure (synchronous SQL; run inside ``write_transaction``).

A user's subject row (keyed by a hash of tenant and user) holds their consent and an erasure
epoch. Erasing bumps the epoch and deletes every row of the user in the same transaction; a
fact-extraction job carries the epoch it was queued under and writes only if the epoch is
unchanged, checked under the subject row's lock in the transaction that writes — so an
extraction in flight during an erasure cannot write the user's data back.
"""

from __future__ import annotations

import typing
from typing import Any, Sequence

from sqlalchemy import Connection, Table, bindparam, select, text, update
from sqlalchemy.dialects import postgresql, sqlite

from xflow_runtime.memory.longterm.scope import subject_key
from xflow_runtime.privacy.subject import SubjectErased
from xflow_runtime.storage.longterm_models import MemorySubjectRow
from xflow_runtime.storage.models import utcnow

subjects = typing.cast(Table, MemorySubjectRow.__table__)  # a declarative model\'s table (typed FromClause)


def _ensure_subject(connection: Connection, key: str) -> None:
    insert = postgresql.insert if connection.dialect.name == "postgresql" else sqlite.insert
    connection.execute(insert(subjects).values(subject_key=key, consent=None, erasure_epoch=0,
                                               updated_at=utcnow()).on_conflict_do_nothing())


def read_subject(connection: Connection, tenant: str, user: str, *, lock: bool = False) -> tuple[bool | None, int]:
    """``(consent, erasure epoch)``; ``lock`` takes the row lock (creating the row if needed)."""
    key = subject_key(tenant, user)
    query = select(subjects.c.consent, subjects.c.erasure_epoch).where(subjects.c.subject_key == key)
    if lock:
        _ensure_subject(connection, key)
        query = query.with_for_update()
    row = connection.execute(query).first()
    return (None, 0) if row is None else (row.consent, row.erasure_epoch)


def check_not_erased(connection: Connection, tenant: str, user: str, started_under: int | None) -> None:
    """Raise :class:`SubjectErased` if the user was erased since a writer read ``started_under``
    (the epoch an instance recorded when it started). Takes the subject row lock, so an erasure
    either commits before this transaction (and the write is refused) or after it (and deletes
    what was written). ``None``: a writer that recorded no epoch (not checked)."""
    if started_under is None or not user:
        return
    _, epoch = read_subject(connection, tenant, user, lock=True)
    if epoch != started_under:
        raise SubjectErased("the user was erased while this instance ran: nothing is written back")


def set_consent(connection: Connection, tenant: str, user: str, consent: bool | None) -> None:
    key = subject_key(tenant, user)
    _ensure_subject(connection, key)
    connection.execute(update(subjects).where(subjects.c.subject_key == key)
                       .values(consent=consent, updated_at=utcnow()))


# (receipt name, statement): every store of a user's data, children before parents.
_ERASE_POSTGRES = [
    ("extraction_jobs", "DELETE FROM xflow_extraction_jobs WHERE tenant_id = :tenant AND user_id = :user"),
    ("facts", "DELETE FROM xflow_memories WHERE tenant_id = :tenant AND user_id = :user AND kind = 'fact'"),
    ("memories", "DELETE FROM xflow_memories WHERE tenant_id = :tenant AND user_id = :user"),
    ("message_embeddings", "DELETE FROM xflow_message_embeddings WHERE tenant_id = :tenant AND user_id = :user"),
    ("chat_messages", "DELETE FROM xflow_chat_messages WHERE tenant_id = :tenant AND user_id = :user"),
    ("chats", "DELETE FROM xflow_chats WHERE tenant_id = :tenant AND user_id = :user"),
    # the user's credentials for the service: an erased user keeps no key (and loses access)
    ("api_keys", "DELETE FROM xflow_api_keys WHERE tenant_id = :tenant AND user_id = :user"),
]
#: human tasks created by the user's instances (their input is the instance's data)
_ERASE_TASKS = "DELETE FROM xflow_user_tasks WHERE tenant_id = :tenant AND instance_id IN :instances"
#: requests of the user's instances to asynchronous proxy agents (their answers)
_ERASE_PROXY_REQUESTS = ("DELETE FROM xflow_agent_proxy_requests WHERE tenant_id = :tenant "
                         "AND instance_id IN :instances")
#: webhooks (URLs, tokens) the user's A2A client gave for the user's instances (specs/a2a.md §5)
_ERASE_PUSH = "DELETE FROM xflow_a2a_push_configs WHERE tenant_id = :tenant AND task_id IN :instances"
_COUNT_EMBEDDINGS = ("SELECT count(*) FROM xflow_memories WHERE tenant_id = :tenant AND user_id = :user "
                     "AND embedding IS NOT NULL")
# SQLite: the FTS rows go with their base rows through triggers; this sweep also removes entries
# a VACUUM may have detached from their rowid (so nothing of the user survives in an index).
_SWEEP_SQLITE = ("chat_messages_index",
                 "DELETE FROM xflow_chat_messages_fts WHERE chat_id IN "
                 "(SELECT id FROM xflow_chats WHERE tenant_id = :tenant AND user_id = :user)")


def erase(connection: Connection, tenant: str, user: str,
          instance_ids: Sequence[str] = ()) -> tuple[dict[str, int], int]:
    """Delete everything of ``user`` in ``tenant`` (every agent) and the tasks of the user's
    instances ``instance_ids``; return counts and the new epoch."""
    key = subject_key(tenant, user)
    _ensure_subject(connection, key)
    epoch = connection.execute(update(subjects).where(subjects.c.subject_key == key)
                               .values(erasure_epoch=subjects.c.erasure_epoch + 1, updated_at=utcnow())
                               .returning(subjects.c.erasure_epoch)).scalar_one()
    params: dict[str, Any] = {"tenant": tenant, "user": user}
    counts = {"embeddings": connection.execute(text(_COUNT_EMBEDDINGS), params).scalar_one()}
    statements = list(_ERASE_POSTGRES)
    sqlite_db = connection.dialect.name == "sqlite"
    if sqlite_db:
        # overwrite freed pages with zeros, so deleted text does not linger in the file
        connection.exec_driver_sql("PRAGMA secure_delete = ON")
        statements.insert(3, _SWEEP_SQLITE)
    for name, statement in statements:
        counts[name] = connection.execute(text(statement), params).rowcount or 0
    counts.pop("chat_messages_index", None)  # only residue would be counted; it is not user-facing
    tables = (("user_tasks", _ERASE_TASKS), ("agent_proxy_requests", _ERASE_PROXY_REQUESTS),
              ("a2a_push_configs", _ERASE_PUSH))
    for name, statement in tables:
        counts[name] = 0
        if instance_ids:
            counts[name] = connection.execute(text(statement).bindparams(bindparam("instances", expanding=True)),
                                              {"tenant": tenant, "instances": list(instance_ids)}).rowcount or 0
    if sqlite_db:
        # FTS5 keeps deleted terms in its segments until they are merged: merge now
        for table in ("xflow_memories_fts", "xflow_chat_messages_fts"):
            connection.exec_driver_sql(f"INSERT INTO {table}({table}) VALUES ('optimize')")
    return counts, epoch
