"""Hybrid search of one scope: ranked lists fused with RRF, optionally reranked.

Lists:

* ``semantic`` / ``keyword`` — memories and facts (``search_pg`` / ``search_sql``), each up to
  ``candidates_per_source``;
* ``messages`` / ``message_semantic`` — the scope user's chat messages with this agent, by
  keyword and by their contextual vectors (``include_messages``; never for anonymous scopes),
  each up to ``message_candidates`` (deeper: RRF needs a list's middle ranks, see config).

The query is embedded in the model's *query* mode, with relative dates written out against the
conversation's time (``time_query``); the keyword lists get the question as asked (less its
function words, ``search_sql.STOP_WORDS``). When the question names a participant of the
conversation, each message list puts what that participant said first (``speaker_focus``,
``LongTermOptions.speaker_focus``). Fusion is RRF, weighted per list by
``LongTermOptions.fusion_weights``. With a reranker configured, the best ``rerank_candidates``
fused hits are reordered by it (a failure keeps the fused order) before the limit is applied.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from typing import Any

from xflow_runtime.memory.longterm import message_index, repository, search_pg, search_sql
from xflow_runtime.memory.longterm.config import LongTermOptions
from xflow_runtime.memory.longterm.embedder import Embedded, Embedder
from xflow_runtime.memory.longterm.fusion import reciprocal_rank_fusion
from xflow_runtime.memory.longterm.records import Memory, MemoryKind, SearchHit
from xflow_runtime.memory.longterm.rerank import Reranker
from xflow_runtime.memory.longterm.scope import MemoryScope
from xflow_runtime.memory.longterm.speaker_focus import named_first, named_speakers
from xflow_runtime.memory.longterm.time_query import resolve_time

MESSAGE = "message:"


def semantic_list_name(position: int, context: str) -> str:
    """The fused list of the chat archive's vectors of ``context``: ``message_semantic`` for the
    first of ``LongTermOptions.message_contexts`` (its weight in ``fusion_weights`` keeps its
    name), ``message_semantic:<context>`` for each other one."""
    return "message_semantic" if position == 0 else f"message_semantic:{context}"


class HybridSearch:
    def __init__(self, options: LongTermOptions, embedder: Embedder, today: Callable[[], date]):
        self.options = options
        self._embedder = embedder
        self._reranker = Reranker(options)
        self._today = today

    async def embed_query(self, query: str, now: date | None = None) -> Embedded | None:
        """The query vector (query mode, relative dates resolved against ``now``)."""
        if not query.strip():
            return None
        return await self._embedder.embed([resolve_time(query, now or self._today()).text], "query")

    async def rerank(self, query: str, hits: list[SearchHit], limit: int) -> list[SearchHit]:
        order = await self._reranker.order(query, [hit.text for hit in hits]) if self._reranker.enabled else None
        if order is None:
            return hits[:limit]
        return [SearchHit(hit.kind, hit.id, hit.text, hit.score, {**hit.ranks, "rerank": position}, hit.title,
                          hit.tags) for position, hit in enumerate((hits[i] for i in order[:limit]), start=1)]

    @property
    def pool(self) -> int:
        """How many fused hits the database part returns for a search with ``limit`` hits."""
        return self.options.rerank_candidates if self._reranker.enabled else 0

    def lists(self, connection: Any, scope: MemoryScope, query: str, embedded: Embedded | None, *,
              kinds: Sequence[MemoryKind], include_messages: bool) -> tuple[dict[str, list[str]], dict[str, Memory],
                                                                             dict[str, str]]:
        """The ranked lists (keys), the memory rows already read, message texts already read."""
        k = self.options.candidates_per_source
        ranked: dict[str, list[str]] = {}
        known: dict[str, Memory] = {}
        if kinds and connection.dialect.name == "postgresql":  # one round trip for both lists and rows
            found_pg = search_pg.candidates(connection, scope, kinds, query, None if embedded is None else embedded.model,
                                            None if embedded is None else embedded.vectors[0], k,
                                            self.options.exact_search_threshold)
            ranked, known = found_pg.lists, found_pg.rows
        elif kinds:
            if embedded is not None:
                ranked["semantic"] = [memory_id for memory_id, _ in search_sql.semantic(
                    connection, scope, kinds, embedded.model, embedded.vectors[0], k,
                    self.options.exact_search_threshold)]
            ranked["keyword"] = search_sql.keyword_memories(connection, scope, kinds, query, k)
        message_text: dict[str, str] = {}
        if include_messages:
            depth = self.options.message_candidates
            found = search_sql.keyword_messages(connection, scope, query, depth)
            message_text = {MESSAGE + key: text for key, text in found}
            ranked["messages"] = [MESSAGE + key for key, _ in found]
            if embedded is not None:  # one list per context kind: never compared with each other
                for position, context in enumerate(self.options.message_contexts):
                    ranked[semantic_list_name(position, context)] = [MESSAGE + key for key in message_index.semantic(
                        connection, scope, embedded.model, embedded.vectors[0], depth, self.options.centre_vectors,
                        context)]
            if self.options.speaker_focus:
                self._focus(connection, scope, query, ranked, message_text)
        return ranked, known, message_text

    @staticmethod
    def _focus(connection: Any, scope: MemoryScope, query: str, ranked: dict[str, list[str]],
               message_text: dict[str, str]) -> None:
        """Speaker focus on the message lists (in place); the texts read on the way are kept."""
        lists = [name for name in ranked if name == "messages" or name.startswith("message_semantic")]
        candidates = list(dict.fromkeys(key for name in lists for key in ranked[name]))
        found = message_index.texts_and_speakers(connection, scope, [key.removeprefix(MESSAGE) for key in candidates])
        speaker_of = {MESSAGE + key: name for key, (_, name) in found.items()}
        message_text.update({MESSAGE + key: said for key, (said, _) in found.items()})
        named = named_speakers(query, {name for name in speaker_of.values() if name})
        for name in lists:
            ranked[name] = named_first(ranked[name], speaker_of, named)

    def search_sync(self, connection: Any, scope: MemoryScope, query: str, embedded: Embedded | None, *,
                    limit: int, kinds: Sequence[MemoryKind], include_messages: bool) -> list[SearchHit]:
        """The database part of a search (lists, fusion, rows), on an open connection."""
        ranked, known, message_text = self.lists(connection, scope, query, embedded, kinds=kinds,
                                                 include_messages=include_messages)
        fused = reciprocal_rank_fusion(ranked, k=self.options.rrf_k, limit=limit,
                                       weights=self.options.fusion_weights)
        keys = [str(item.key) for item in fused]
        missing = [key for key in keys if not key.startswith(MESSAGE) and key not in known]
        rows = {**known, **repository.get_many(connection, scope, missing)}
        unread = [key.removeprefix(MESSAGE) for key in keys if key.startswith(MESSAGE) and key not in message_text]
        message_text.update({MESSAGE + key: text for key, text in message_index.texts(connection, scope, unread).items()})
        hits: list[SearchHit] = []
        for item in fused:
            key = str(item.key)
            if key in message_text:
                hits.append(SearchHit("message", key.removeprefix(MESSAGE), message_text[key], item.score, item.ranks))
            elif key in rows:
                row = rows[key]
                hits.append(SearchHit(row.kind, row.id, row.content, item.score, item.ranks, row.title, row.tags))
        return hits
