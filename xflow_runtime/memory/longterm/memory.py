"""``LongTermMemory``: the public, async API of long-term memory.

    memory = LongTermMemory.open(url, LongTermOptions(embedding_model="openai/text-embedding-3-small"))
    scope = MemoryScope(tenant="acme", agent="support-bot", user="customer-42")

    tools = memory.tools_for(scope)                        # memory_write / memory_search / memory_delete
    reply = await memory.call_tool(scope, name, arguments)  # a tool message's content (JSON text)
    system = with_memory_block(static_system, await memory.render_block(scope, memories=10, facts=10))
    await memory.after_turn(scope, conversation, FactExtractionSettings(enabled=True), model="gpt-4o")

Database work runs in worker threads; extraction runs in a background task (see
:mod:`~xflow_runtime.memory.longterm.extraction`). Every call takes a scope; nothing searches
across scopes. See ``specs/memory-longterm.md``.
"""

from __future__ import annotations

import builtins
import asyncio
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, timezone
from typing import Any

from sqlalchemy import Engine

from xflow_runtime.memory.longterm import jobs, privacy, repository, scope_index, search_pg, search_sql
from xflow_runtime.memory.longterm.block import render_memory_block
from xflow_runtime.memory.longterm.config import (DEFAULT_INJECT_RECENT, DEFAULT_SEARCH_LIMIT,
                                                  MAX_SEARCH_LIMIT, FactExtractionSettings, LongTermOptions)
from xflow_runtime.memory.longterm.context_text import memory_text
from xflow_runtime.memory.longterm.embedder import Embedded, Embedder
from xflow_runtime.memory.longterm.errors import LongTermMemoryError, MemoryNotFound
from xflow_runtime.memory.longterm.extraction import ExtractionRunner, dedup_key, user_turns, write_facts
from xflow_runtime.memory.longterm.extraction_prompt import ExtractedFact
from xflow_runtime.memory.longterm.message_indexer import MessageIndexer
from xflow_runtime.memory.longterm.records import (ErasureReceipt, Memory, MemoryKind, MemoryPage, SearchHit,
                                                   WriteResult)
from xflow_runtime.memory.longterm.reindex import ReindexReport, reindex_tenant
from xflow_runtime.memory.longterm.scope import MemoryScope
from xflow_runtime.memory.longterm.search import HybridSearch
from xflow_runtime.memory.longterm.tools import (TOOL_NAMES, TOOL_SCHEMAS, ToolArgumentError, delete_args,
                                                 search_args, write_args)
from xflow_runtime.privacy.subject import ErasureIncomplete
from xflow_runtime.storage.database import CHECKPOINT_WAIT_S, checkpoint_wal, open_database, write_transaction

_log = logging.getLogger("xflow_runtime.memory.longterm")
_ALL_KINDS: tuple[MemoryKind, ...] = ("memory", "fact")


class LongTermMemory:
    """Agent memories and user facts in one database. Create with :meth:`open`."""

    def __init__(self, engine: Engine, options: LongTermOptions | None = None, *,
                 block_template: str | None = None, today: Callable[[], date] | None = None):
        self._engine = engine
        self.options = options or LongTermOptions()
        search_pg.configure_engine(engine, self.options.candidates_per_source)
        self.block_template = block_template
        self._embedder = Embedder(self.options)
        self._runner = ExtractionRunner(engine, self.options, self._embedder, today)
        self._indexer = MessageIndexer(engine, self._embedder)
        self._search = HybridSearch(self.options, self._embedder,
                                    today or (lambda: datetime.now(timezone.utc).date()))

    @classmethod
    def open(cls, url: str | None = None, options: LongTermOptions | None = None, **kwargs: Any) -> "LongTermMemory":
        return cls(open_database(url), options, **kwargs)

    @property
    def engine(self) -> Engine:
        return self._engine

    async def aclose(self) -> None:
        await self._runner.close()
        await self._indexer.close()
        self._engine.dispose()

    def close(self) -> None:
        self._engine.dispose()

    async def __aenter__(self) -> "LongTermMemory":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- helpers -------------------------------------------------------------------------------

    def _read(self, work: Callable[[Any], Any]) -> Any:
        with self._engine.connect() as connection:
            result = work(connection)
            connection.rollback()
            return result

    def _write(self, work: Callable[[Any], Any]) -> Any:
        with write_transaction(self._engine) as connection:
            return work(connection)

    async def _embed_one(self, text: str) -> Embedded | None:
        return await self._embedder.embed([text], "document")

    def _prepare_vectors(self, connection: Any, embedded: Embedded | None) -> None:
        if embedded is not None and connection.dialect.name == "postgresql":
            search_sql.ensure_vector_index(connection, embedded.model, embedded.dimensions)

    # -- agent memories ------------------------------------------------------------------------

    async def write(self, scope: MemoryScope, title: str, content: str, tags: Sequence[str] = ()) -> WriteResult:
        """Upsert by title (what ``memory_write`` does): concurrent writers leave one row."""
        embedded = await self._embed_one(memory_text(title, content))

        def work(connection: Any) -> WriteResult:
            privacy.check_not_erased(connection, scope.tenant, scope.user_id, scope.erasure_epoch)
            self._prepare_vectors(connection, embedded)
            memory, created = repository.upsert_by_title(connection, scope, title, content, tags, embedded)
            return WriteResult(memory, created)
        return await asyncio.to_thread(self._write, work)

    async def create(self, scope: MemoryScope, title: str, content: str, tags: Sequence[str] = ()) -> Memory:
        """Strict create: :class:`MemoryConflict` when the title exists in the scope."""
        embedded = await self._embed_one(memory_text(title, content))

        def work(connection: Any) -> Memory:
            self._prepare_vectors(connection, embedded)
            return repository.create(connection, scope, title, content, tags, embedded)
        return await asyncio.to_thread(self._write, work)

    async def get(self, scope: MemoryScope, memory_id: str) -> Memory:
        found = await asyncio.to_thread(self._read, lambda c: repository.get(c, scope, memory_id))
        if found is None:
            raise MemoryNotFound(f"no memory {memory_id!r} in this scope")
        return found

    async def update(self, scope: MemoryScope, memory_id: str, *, title: str | None = None,
                     content: str | None = None, tags: Sequence[str] | None = None) -> Memory:
        current = await self.get(scope, memory_id)
        values: dict[str, Any] = {}
        if title is not None:
            if current.kind != "memory":
                raise LongTermMemoryError("facts have no title")
            values["title"] = title
        if content is not None:
            values["content"] = content
        if tags is not None:
            values["tags"] = list(tags)
        if "title" in values or "content" in values:
            embedded = await self._embed_one(memory_text(
                values.get("title", current.title) if current.kind == "memory" else None,
                values.get("content", current.content)))
            values.update(repository.vector_values(embedded))
        else:
            embedded = None

        def work(connection: Any) -> Memory | None:
            self._prepare_vectors(connection, embedded)
            return repository.update_memory(connection, scope, memory_id, values)
        updated = await asyncio.to_thread(self._write, work)
        if updated is None:
            raise MemoryNotFound(f"no memory {memory_id!r} in this scope")
        return updated

    async def delete(self, scope: MemoryScope, memory_id: str) -> None:
        deleted = await asyncio.to_thread(self._write, lambda c: repository.delete_memory(c, scope, memory_id))
        if not deleted:
            raise MemoryNotFound(f"no memory {memory_id!r} in this scope")

    async def list(self, scope: MemoryScope, *, kind: MemoryKind | None = None, query: str | None = None,
                   offset: int = 0, limit: int = 50) -> MemoryPage:
        """A page of memories: newest first, or by keyword relevance when ``query`` is given."""
        if offset < 0 or not 1 <= limit <= 1000:
            raise LongTermMemoryError("offset must be ≥ 0 and limit from 1 to 1000")
        kinds = _ALL_KINDS if kind is None else (kind,)

        def work(connection: Any) -> MemoryPage:
            if not query:
                items, more = repository.page(connection, scope, kind, offset, limit)
                return MemoryPage(tuple(items), offset + limit if more else None)
            ids = search_sql.keyword_memories(connection, scope, kinds, query, limit + 1, offset)
            found = repository.get_many(connection, scope, ids[:limit])
            return MemoryPage(tuple(found[i] for i in ids[:limit] if i in found),
                              offset + limit if len(ids) > limit else None)
        return await asyncio.to_thread(self._read, work)

    async def recent(self, scope: MemoryScope, kind: MemoryKind = "memory",
                     count: int = DEFAULT_INJECT_RECENT) -> builtins.list[Memory]:
        return await asyncio.to_thread(self._read, lambda c: repository.recent(c, scope, kind, count))

    async def render_block(self, scope: MemoryScope, *, memories: int = DEFAULT_INJECT_RECENT,
                           facts: int = 0, template: str | None = None) -> str:
        """The system-prompt block: the ``memories`` most recent agent memories and the ``facts``
        most recent facts (0 leaves a part out). Byte-identical until a write or delete."""
        def work(connection: Any) -> tuple[list[Memory], list[Memory]]:
            return (repository.recent(connection, scope, "memory", memories),
                    repository.recent(connection, scope, "fact", facts))
        shown_memories, shown_facts = await asyncio.to_thread(self._read, work)
        return render_memory_block(shown_memories, shown_facts, template or self.block_template)

    # -- search --------------------------------------------------------------------------------

    async def search(self, scope: MemoryScope, query: str, *, limit: int = DEFAULT_SEARCH_LIMIT,
                     kinds: Sequence[MemoryKind] = _ALL_KINDS, include_messages: bool = False,
                     now: date | None = None) -> builtins.list[SearchHit]:
        """Hybrid search (:mod:`~xflow_runtime.memory.longterm.search`): semantic (when an
        embedding model is configured and answers) and keyword lists fused with RRF, reranked
        when a reranker is configured. ``now`` is the conversation's date relative times in the
        question are resolved against (default: today). ``kinds=()`` with ``include_messages``
        searches the chat archive only."""
        if not isinstance(query, str) or not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise LongTermMemoryError(f"search needs a query and a limit from 1 to {MAX_SEARCH_LIMIT}")
        embedded = await self.embed_query(query, now)
        pool = max(limit, self._search.pool)
        hits = await asyncio.to_thread(self._read, lambda c: self.search_sync(
            c, scope, query, embedded, limit=pool, kinds=kinds, include_messages=include_messages))
        return await self._search.rerank(query, hits, limit)

    async def embed_query(self, query: str, now: date | None = None) -> Embedded | None:
        """The vector :meth:`search` uses for ``query`` (query mode, dates resolved against ``now``)."""
        return await self._search.embed_query(query, now)

    async def search_messages(self, scope: MemoryScope, query: str, *, limit: int = DEFAULT_SEARCH_LIMIT,
                              now: date | None = None) -> builtins.list[SearchHit]:
        """Hybrid search over the scope user's chat archive with this agent (messages only)."""
        return await self.search(scope, query, limit=limit, kinds=(), include_messages=True, now=now)

    def search_sync(self, connection: Any, scope: MemoryScope, query: str, embedded: Embedded | None, *,
                    limit: int, kinds: Sequence[MemoryKind], include_messages: bool) -> builtins.list[SearchHit]:
        """The database part of :meth:`search` (what the bench times), on an open connection."""
        return self._search.search_sync(connection, scope, query, embedded, limit=limit, kinds=kinds,
                                        include_messages=include_messages)

    # -- chat archive --------------------------------------------------------------------------

    async def index_messages(self, scope: MemoryScope) -> int:
        """Embed the scope's not yet indexed chat messages now (normally done in the background
        after each turn); returns how many were indexed."""
        return await self._indexer.index(scope)

    async def wait_for_indexing(self) -> None:
        """Wait until background message indexing is done (tests, shutdown)."""
        await self._indexer.wait_idle()

    async def reindex(self, tenant: str, *, force: bool = False) -> ReindexReport:
        """Re-embed a tenant's memories, facts and chat messages made under another embedding
        model or modes (all of them with ``force``, e.g. after a change of the contextual
        format): ``xflow memory reindex``."""
        return await reindex_tenant(self._engine, self._embedder, self._indexer, tenant, force=force)

    # -- tools ---------------------------------------------------------------------------------

    def tools_for(self, scope: MemoryScope) -> builtins.list[dict[str, Any]]:
        """The OpenAI-format tool definitions to offer the model (same bytes on every call)."""
        return [json.loads(json.dumps(tool)) for tool in TOOL_SCHEMAS]

    @staticmethod
    def is_memory_tool(name: str) -> bool:
        return name in TOOL_NAMES

    async def call_tool(self, scope: MemoryScope, name: str, arguments: Mapping[str, Any] | str) -> str:
        """Run a memory tool call; returns the tool message content (JSON text). Bad arguments
        and unknown ids come back as ``{"error": …}`` for the model, not as exceptions."""
        try:
            if isinstance(arguments, str):
                arguments = json.loads(arguments or "{}")
            if not isinstance(arguments, Mapping):
                raise ToolArgumentError("arguments must be a JSON object")
            result = await self._tool(scope, name, arguments)
        except (ToolArgumentError, ValueError, LongTermMemoryError) as error:
            result = {"error": str(error)}
        return json.dumps(result, ensure_ascii=False, sort_keys=True)

    async def _tool(self, scope: MemoryScope, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        if name == "memory_write":
            args = write_args(arguments)
            written = await self.write(scope, args.title, args.content, args.tags)
            return {"id": written.memory.id, "status": "created" if written.created else "updated"}
        if name == "memory_search":
            query, limit = search_args(arguments)
            hits = await self.search(scope, query, limit=limit)
            return {"results": [hit.to_dict() for hit in hits]}
        if name == "memory_delete":
            memory_id = delete_args(arguments)
            await self.delete(scope, memory_id)
            return {"id": memory_id, "status": "deleted"}
        raise ToolArgumentError(f"unknown memory tool {name!r}")

    # -- facts ---------------------------------------------------------------------------------

    async def add_facts(self, scope: MemoryScope, facts: Sequence[ExtractedFact | str], *,
                        source: str | None = None) -> int:
        """Store facts directly (dedup in place as extraction does). Respects consent and erasure."""
        if not scope.user:
            raise LongTermMemoryError("facts belong to an end user: the scope needs a user")
        items = [fact if isinstance(fact, ExtractedFact) else ExtractedFact(" ".join(fact.split()), "general", 5)
                 for fact in facts]
        embedded = await self._embedder.embed([fact.content for fact in items]) if items else None

        def work(connection: Any) -> int:
            privacy.check_not_erased(connection, scope.tenant, scope.user_id, scope.erasure_epoch)
            consent, _ = privacy.read_subject(connection, scope.tenant, scope.user_id, lock=True)
            if consent is False:
                return 0
            return write_facts(connection, scope, items, embedded, source, self.options)
        return await asyncio.to_thread(self._write, work)

    async def after_turn(self, scope: MemoryScope, messages: Sequence[Mapping[str, Any]],
                         settings: FactExtractionSettings, *, model: str | None = None,
                         source: str | None = None) -> str | None:
        """Call after each completed turn with the conversation so far (oldest first). Queues an
        extraction job when enabled, the scope has a user, the conversation has at least
        ``min_user_turns`` user messages and the user has not refused consent; returns the job
        id (``None``: nothing queued). Only a row insert happens here; the LLM call runs in the
        background, as does embedding the scope's new chat messages (``index_messages``)."""
        if self.options.index_messages:
            self._indexer.kick(scope)
        if not settings.enabled or not scope.user or user_turns(messages) < settings.min_user_turns:
            return None
        extraction_model = settings.model or model
        if not extraction_model:
            raise LongTermMemoryError("factExtraction needs a model (none set and no step model given)")
        window = [dict(message) for message in messages[-settings.last_messages:]]
        key = dedup_key(window, source)

        def work(connection: Any) -> str | None:
            # the subject row lock orders this insert with a concurrent erasure: the erasure
            # either deletes the new job or happens before it (and the job gets the new epoch)
            privacy.check_not_erased(connection, scope.tenant, scope.user_id, scope.erasure_epoch)
            consent, epoch = privacy.read_subject(connection, scope.tenant, scope.user_id, lock=True)
            if consent is False:
                return None
            return jobs.enqueue(connection, scope, model=extraction_model, messages=window, dedup_key=key,
                                source=source, erasure_epoch=epoch)
        job_id = await asyncio.to_thread(self._write, work)
        if job_id is not None:
            self._runner.kick()
        return job_id

    async def wait_for_extractions(self) -> None:
        """Wait until queued extraction work is done or waiting for a retry later (tests, shutdown)."""
        await self._runner.wait_idle()

    async def run_pending_extractions(self) -> int:
        """Run due jobs in the calling task (e.g. a worker process after a crash); returns count."""
        return await self._runner.run_pending()

    async def extraction_jobs(self, scope: MemoryScope) -> builtins.list[dict[str, Any]]:
        return await asyncio.to_thread(self._read, lambda c: jobs.job_status(c, scope))

    # -- privacy -------------------------------------------------------------------------------

    async def set_consent(self, tenant: str, user: str, allowed: bool | None) -> None:
        """Record a user's consent to fact extraction (``False`` stops it; ``None`` = unstated)."""
        _check_user(tenant, user)
        await asyncio.to_thread(self._write, lambda c: privacy.set_consent(c, tenant, user, allowed))

    async def consent(self, tenant: str, user: str) -> bool | None:
        _check_user(tenant, user)
        return (await asyncio.to_thread(self._read, lambda c: privacy.read_subject(c, tenant, user)))[0]

    async def erase_user(self, tenant: str, user: str, *, checkpoint_wait: float = CHECKPOINT_WAIT_S) -> ErasureReceipt:
        """Erasure of a user in this memory store only, across every agent: chats, messages,
        memories, facts, embeddings, extraction jobs. Idempotent; in-flight extraction cannot
        write back. GDPR erasure of everything (the durable store too) is
        :func:`xflow_runtime.erase_user`. On SQLite the deleted rows' old page images leave the
        WAL file with a checkpoint, which waits ``checkpoint_wait`` seconds for its readers; past
        that, :class:`~xflow_runtime.privacy.ErasureIncomplete` (rows deleted, copies left in the
        WAL: run it again)."""
        _check_user(tenant, user)
        counts, epoch = await asyncio.to_thread(self._write, lambda c: privacy.erase(c, tenant, user))
        # the user's own HNSW indexes (their predicate names the user), once the rows are gone
        await asyncio.to_thread(scope_index.drop_for_user, self.engine, tenant, user)
        search_pg.forget_statements()  # (the cached texts of indexed scopes' searches name their users)
        receipt = ErasureReceipt(tenant, user, counts, epoch)
        if not await asyncio.to_thread(checkpoint_wal, self.engine, wait_s=checkpoint_wait):
            _log.warning("erasure of a user in tenant %r incomplete: old copies remain in the WAL", tenant)
            raise ErasureIncomplete(receipt, (f"{self.engine.url.database}-wal",))
        _log.info("erased a user in tenant %r: %s", tenant, counts)
        return receipt


def _check_user(tenant: str, user: str) -> None:
    if not isinstance(tenant, str) or not tenant or not isinstance(user, str) or not user:
        raise LongTermMemoryError("tenant and user must be non-empty strings")
