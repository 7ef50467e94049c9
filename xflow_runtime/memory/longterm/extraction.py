"""Fact extraction: decide whether a turn queues a job, and run queued jobs (off the reply path).

:class:`ExtractionRunner` drains the durable queue in one asyncio task per event loop; the reply
path only inserts a row. A failure (HTTP error, timeout, malformed JSON) is logged and retried
with backoff — it never reaches the conversation and is never taken as "no facts". A user who
refused consent never gets an extraction call.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, timezone
from typing import Any

from sqlalchemy import Engine

from xflow_runtime.memory.longterm import jobs, privacy, repository, search_sql
from xflow_runtime.memory.longterm.background import PerLoopTask
from xflow_runtime.memory.longterm.config import LongTermOptions
from xflow_runtime.memory.longterm.embedder import Embedded, Embedder
from xflow_runtime.memory.longterm.extraction_prompt import (ExtractedFact, extraction_messages,
                                                              parse_facts)
from xflow_runtime.memory.longterm.scope import MemoryScope
from xflow_runtime.storage.database import write_transaction

_log = logging.getLogger("xflow_runtime.memory.longterm")
LEASE_S = 300.0


def user_turns(messages: Sequence[Mapping[str, Any]]) -> int:
    return sum(1 for message in messages if message.get("role") == "user")


def dedup_key(messages: Sequence[Mapping[str, Any]], source: str | None) -> str:
    """One job per conversation state: the source and a digest of the messages it reads."""
    digest = hashlib.sha256(json.dumps(list(messages), sort_keys=True, default=str).encode()).hexdigest()
    return f"{source or ''}#{user_turns(messages)}#{digest[:32]}"


def write_facts(connection: Any, scope: MemoryScope, facts: Sequence[ExtractedFact], embedded: Embedded | None,
                source: str | None, options: LongTermOptions) -> int:
    """Insert facts, updating near-duplicates of the scope in place. Returns facts inserted or updated."""
    if connection.dialect.name == "postgresql" and embedded is not None:
        search_sql.ensure_vector_index(connection, embedded.model, embedded.dimensions)
    for index, fact in enumerate(facts):
        duplicate = None
        if embedded is not None:
            nearest = search_sql.semantic(connection, scope, ["fact"], embedded.model, embedded.vectors[index],
                                          1, options.exact_search_threshold)
            if nearest and nearest[0][1] >= options.dedup_threshold - 1e-6:
                duplicate = nearest[0][0]
        if duplicate is None:
            duplicate = repository.same_fact(connection, scope, fact.content)
        if duplicate is not None:
            repository.refresh_fact(connection, scope, duplicate, fact.content, fact.category,
                                    fact.importance, embedded, index)
        else:
            repository.insert_fact(connection, scope, fact.content, fact.category, fact.importance,
                                   source, embedded, index)
    return len(facts)


class ExtractionRunner:
    """Runs queued extraction jobs for one database."""

    def __init__(self, engine: Engine, options: LongTermOptions, embedder: Embedder,
                 today: Callable[[], date] | None = None):
        self._engine = engine
        self._options = options
        self._embedder = embedder
        self._today = today or (lambda: datetime.now(timezone.utc).date())
        self._worker = PerLoopTask("xflow-fact-extraction", self._drain)

    def kick(self) -> None:
        """Make sure a drain task runs on the current event loop (cheap when one does)."""
        self._worker.kick()

    async def wait_idle(self) -> None:
        """Wait until the queue has nothing due (retries scheduled later keep the task alive)."""
        await self._worker.wait_idle()

    async def close(self) -> None:
        await self._worker.close()

    async def run_pending(self) -> int:
        """Run every job that is due now, in this task; return how many were processed."""
        processed = 0
        while True:
            job = await asyncio.to_thread(self._claim)
            if job is None:
                return processed
            await self.process(job)
            processed += 1

    async def _drain(self) -> None:
        while True:
            await self.run_pending()
            due = await asyncio.to_thread(self._next_due)
            if due is None:
                return
            wait = (due - datetime.now(timezone.utc)).total_seconds()
            await asyncio.sleep(min(max(wait, 0.01), 60.0))

    def _claim(self) -> jobs.Job | None:
        with write_transaction(self._engine) as connection:
            return jobs.claim(connection, LEASE_S)

    def _next_due(self) -> datetime | None:
        with self._engine.connect() as connection:
            due = jobs.next_due(connection)
        if due is not None and due.tzinfo is None:
            due = due.replace(tzinfo=timezone.utc)  # SQLite returns naive UTC
        return due

    async def process(self, job: jobs.Job) -> None:
        tenant, user = job.scope.tenant, job.scope.user_id
        consent, _ = await asyncio.to_thread(self._read_subject, tenant, user)
        if consent is False:
            await asyncio.to_thread(self._finish, job, 0, "skipped: consent refused")
            return
        try:
            facts = await self._extract(job)
        except Exception as error:  # every failure is retried, logged, and kept out of the chat
            message = f"{type(error).__name__}: {error}"
            status = await asyncio.to_thread(self._fail, job, message)
            _log.warning("fact extraction job %s attempt %d failed (%s): %s", job.id, job.attempts,
                         status, message[:300])
            return
        embedded = await self._embedder.embed([fact.content for fact in facts]) if facts else None
        written = await asyncio.to_thread(self._store, job, facts, embedded)
        if written is None:
            _log.info("fact extraction job %s discarded: the user was erased or withdrew consent", job.id)

    async def _extract(self, job: jobs.Job) -> list[ExtractedFact]:
        from xflow_runtime._env import apply_offline_defaults

        apply_offline_defaults()
        import litellm

        litellm.suppress_debug_info = True
        from xflow_runtime.llm.client import model_for_endpoint

        kwargs: dict[str, Any] = dict(self._options.extra_params)
        model = job.model
        if self._options.api_base:  # one OpenAI-compatible endpoint: the agent's client's rule
            kwargs["api_base"] = self._options.api_base
            model = model_for_endpoint(model)
        if self._options.api_key:
            kwargs["api_key"] = self._options.api_key
        response = await litellm.acompletion(
            model=model, messages=extraction_messages(job.messages, self._today()), max_retries=0,
            timeout=self._options.extraction_timeout_s, temperature=0, **kwargs)
        return parse_facts(response.choices[0].message.content)

    def _read_subject(self, tenant: str, user: str) -> tuple[bool | None, int]:
        with self._engine.connect() as connection:
            return privacy.read_subject(connection, tenant, user)

    def _finish(self, job: jobs.Job, written: int, note: str | None) -> None:
        with write_transaction(self._engine) as connection:
            jobs.finish(connection, job, facts_written=written, note=note)

    def _fail(self, job: jobs.Job, message: str) -> str:
        with write_transaction(self._engine) as connection:
            return jobs.fail(connection, job, message, max_attempts=self._options.extraction_max_attempts,
                             retry_base_s=self._options.extraction_retry_base_s)

    def _store(self, job: jobs.Job, facts: Sequence[ExtractedFact], embedded: Embedded | None) -> int | None:
        """Write the facts unless the user was erased (epoch moved), withdrew consent, or the job
        was deleted — checked under the subject row's lock, in the writing transaction."""
        with write_transaction(self._engine) as connection:
            consent, epoch = privacy.read_subject(connection, job.scope.tenant, job.scope.user_id, lock=True)
            if epoch != job.erasure_epoch or consent is False or not jobs.still_running(connection, job):
                jobs.finish(connection, job, facts_written=0, note="discarded: user erased or consent refused")
                return None
            written = write_facts(connection, job.scope, facts, embedded, job.source, self._options)
            jobs.finish(connection, job, facts_written=written)
            return written
