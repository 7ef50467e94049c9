"""The durable fact-extraction queue (synchronous SQL).

A job is a row: ``pending`` → ``running`` (claimed with a lease) → ``done`` or back to
``pending`` with a later ``run_after`` on failure, ``failed`` after the last attempt. A job
whose lease ran out while ``running`` (its process died) is claimed again, so a crash loses
none. PostgreSQL claims with ``FOR UPDATE SKIP LOCKED`` (many workers); SQLite's
``BEGIN IMMEDIATE`` serialises claims.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
import typing
from typing import Any, Mapping, Sequence

from sqlalchemy import Connection, Table, delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite

from xflow_runtime.memory.longterm.scope import MemoryScope
from xflow_runtime.storage.longterm_models import ExtractionJobRow
from xflow_runtime.storage.models import utcnow

jobs = typing.cast(Table, ExtractionJobRow.__table__)  # a declarative model\'s table (typed FromClause)
_c = jobs.c


@dataclass(frozen=True)
class Job:
    id: str
    scope: MemoryScope
    model: str
    messages: list[dict[str, Any]]
    attempts: int
    erasure_epoch: int
    source: str | None


def enqueue(connection: Connection, scope: MemoryScope, *, model: str, messages: Sequence[Mapping[str, Any]],
            dedup_key: str, source: str | None, erasure_epoch: int) -> str | None:
    """Queue a job; ``None`` when the same (scope, dedup_key) was queued before."""
    insert = postgresql.insert if connection.dialect.name == "postgresql" else sqlite.insert
    now = utcnow()
    job_id = uuid.uuid4().hex
    inserted = connection.execute(insert(jobs).values(
        id=job_id, tenant_id=scope.tenant, agent_id=scope.agent, user_id=scope.user_id,
        dedup_key=dedup_key[:600], source=source, model=model, messages=[dict(m) for m in messages],
        status="pending", attempts=0, erasure_epoch=erasure_epoch, run_after=now, facts_written=0,
        created_at=now, updated_at=now).on_conflict_do_nothing().returning(_c.id)).scalar_one_or_none()
    return inserted


def claim(connection: Connection, lease_s: float) -> Job | None:
    """Take the next ready job (pending and due, or running with an expired lease)."""
    now = utcnow()
    ready = (select(_c.id).where(_c.status.in_(("pending", "running")), _c.run_after <= now)
             .order_by(_c.run_after, _c.id).limit(1))
    if connection.dialect.name == "postgresql":
        ready = ready.with_for_update(skip_locked=True)
    row = connection.execute(
        update(jobs).where(_c.id == ready.scalar_subquery())
        .values(status="running", attempts=_c.attempts + 1, run_after=now + timedelta(seconds=lease_s),
                updated_at=now)
        .returning(_c.id, _c.tenant_id, _c.agent_id, _c.user_id, _c.model, _c.messages, _c.attempts,
                   _c.erasure_epoch, _c.source)).first()
    if row is None:
        return None
    return Job(id=row.id, scope=MemoryScope(row.tenant_id, row.agent_id, row.user_id or None),
               model=row.model, messages=list(row.messages), attempts=row.attempts,
               erasure_epoch=row.erasure_epoch, source=row.source)


def still_running(connection: Connection, job: Job) -> bool:
    """The job row is still ours (erasure deletes the user's jobs, in flight or not)."""
    return connection.execute(select(_c.id).where(_c.id == job.id, _c.status == "running",
                                                  _c.attempts == job.attempts)).first() is not None


def finish(connection: Connection, job: Job, *, facts_written: int, note: str | None = None) -> None:
    """Mark the job done and drop its copy of the conversation (no reason to keep it)."""
    connection.execute(update(jobs).where(_c.id == job.id, _c.attempts == job.attempts).values(
        status="done", facts_written=facts_written, last_error=note, messages=[], updated_at=utcnow()))


def fail(connection: Connection, job: Job, error: str, *, max_attempts: int, retry_base_s: float) -> str:
    """Record a failed attempt: back to ``pending`` after an exponential backoff, or ``failed``."""
    status = "failed" if job.attempts >= max_attempts else "pending"
    delay = retry_base_s * (2 ** (job.attempts - 1))
    now = utcnow()
    connection.execute(update(jobs).where(_c.id == job.id, _c.attempts == job.attempts).values(
        status=status, last_error=error[:2000], run_after=now + timedelta(seconds=delay), updated_at=now))
    return status


def next_due(connection: Connection) -> Any:
    """When the earliest pending or leased job becomes ready (``None``: queue empty)."""
    return connection.execute(select(func.min(_c.run_after))
                              .where(_c.status.in_(("pending", "running")))).scalar_one()


def job_status(connection: Connection, scope: MemoryScope) -> list[dict[str, Any]]:
    rows = connection.execute(select(_c.id, _c.status, _c.attempts, _c.last_error, _c.facts_written,
                                     _c.dedup_key)
                              .where(_c.tenant_id == scope.tenant, _c.agent_id == scope.agent,
                                     _c.user_id == scope.user_id).order_by(_c.created_at, _c.id))
    return [dict(row._mapping) for row in rows]


def purge_finished(connection: Connection, older_than_s: float) -> int:
    cutoff = utcnow() - timedelta(seconds=older_than_s)
    return connection.execute(delete(jobs).where(_c.status.in_(("done", "failed")),
                                                 _c.updated_at < cutoff)).rowcount or 0
