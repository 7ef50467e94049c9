"""Settings: what an ``aiagent`` step asks for, and how a :class:`LongTermMemory` is wired.

Per step (both off by default)::

    longTermMemory: {enabled: true, injectRecent: 10}
    factExtraction: {enabled: true, model: gpt-4o-mini, minUserTurns: 3, lastMessages: 15}

Per runtime (:class:`LongTermOptions`): the embedding model (``None`` → keyword search only),
the endpoint for embedding and extraction calls, the dedup threshold and search tuning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from xflow_runtime.memory.longterm.context_text import MESSAGE_CONTEXTS
from xflow_runtime.memory.longterm.embedding_modes import SYMMETRIC, EmbeddingModes
from xflow_runtime.memory.longterm.errors import LongTermMemoryError

DEFAULT_INJECT_RECENT = 10
DEFAULT_MIN_USER_TURNS = 3
DEFAULT_LAST_MESSAGES = 15
DEFAULT_DEDUP_THRESHOLD = 0.90
DEFAULT_SEARCH_LIMIT = 10
MAX_SEARCH_LIMIT = 50
DEFAULT_KEYWORD_INDEX_THRESHOLD = 20_000


def _int_field(raw: Mapping[str, Any], key: str, default: int, minimum: int, where: str) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise LongTermMemoryError(f"{where}.{key} must be an integer ≥ {minimum}, found {value!r}")
    return value


def _mapping(raw: Any, known: set[str], where: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise LongTermMemoryError(f"{where} must be an object")
    unknown = set(raw) - known
    if unknown:
        raise LongTermMemoryError(f"{where}: unknown field(s) {sorted(unknown)}; expected {sorted(known)}")
    enabled = raw.get("enabled", False)
    if not isinstance(enabled, bool):
        raise LongTermMemoryError(f"{where}.enabled must be true or false")
    return raw


@dataclass(frozen=True)
class LongTermMemorySettings:
    """A step's ``longTermMemory``: the three tools and the injected block of recent memories."""

    enabled: bool = False
    inject_recent: int = DEFAULT_INJECT_RECENT

    @classmethod
    def from_definition(cls, raw: Mapping[str, Any] | None) -> "LongTermMemorySettings":
        if raw is None:
            return cls()
        raw = _mapping(raw, {"enabled", "injectRecent"}, "longTermMemory")
        return cls(enabled=raw.get("enabled", False),
                   inject_recent=_int_field(raw, "injectRecent", DEFAULT_INJECT_RECENT, 0, "longTermMemory"))


@dataclass(frozen=True)
class FactExtractionSettings:
    """A step's ``factExtraction``: background extraction after a turn, facts injected later."""

    enabled: bool = False
    model: str | None = None  # None: the step's own model
    min_user_turns: int = DEFAULT_MIN_USER_TURNS
    last_messages: int = DEFAULT_LAST_MESSAGES
    inject_recent: int = DEFAULT_INJECT_RECENT

    @classmethod
    def from_definition(cls, raw: Mapping[str, Any] | None) -> "FactExtractionSettings":
        if raw is None:
            return cls()
        raw = _mapping(raw, {"enabled", "model", "minUserTurns", "lastMessages"}, "factExtraction")
        model = raw.get("model")
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise LongTermMemoryError("factExtraction.model must be a non-empty string")
        return cls(enabled=raw.get("enabled", False), model=model,
                   min_user_turns=_int_field(raw, "minUserTurns", DEFAULT_MIN_USER_TURNS, 1, "factExtraction"),
                   last_messages=_int_field(raw, "lastMessages", DEFAULT_LAST_MESSAGES, 1, "factExtraction"))


@dataclass(frozen=True)
class LongTermOptions:
    """How a :class:`~xflow_runtime.memory.longterm.LongTermMemory` reaches models and searches.

    ``api_base``/``api_key`` are passed to litellm for embedding and extraction calls (e.g. the
    scripted model server, or a gateway); ``None`` uses litellm's provider defaults.
    """

    embedding_model: str | None = None
    embedding_dimensions: int | None = None  # ask the provider for this size (if it supports it)
    api_base: str | None = None
    api_key: str | None = None
    dedup_threshold: float = DEFAULT_DEDUP_THRESHOLD
    #: a scope with at most this many vectors is searched exactly (scope first); above it, the
    #: per-model HNSW index with pgvector's iterative scan (verified complete, else exact)
    exact_search_threshold: int = 5000
    #: a scope with more vectors than this gets its own HNSW index from ``xflow memory
    #: index-scopes`` (PostgreSQL; ``scope_index``); until it is built, the path above. 1,000: the
    #: own index costs ~2.5 ms of server CPU at 2,000 rows, exact search 2.0 ms at 400 and 5–7 ms at
    #: 2,000; every scope index adds planning time to all searches — specs/performance.md §3
    scope_index_threshold: int = 1000
    #: a (tenant, agent, user) with more rows than this also gets its own keyword index from the
    #: same command: its keyword list no longer intersects the words with a posting list of every
    #: row of the scope (−0.3 to −0.4 ms of server CPU at 100,000 rows); not lower, as each partial index
    #: adds planning time to the searches of small scopes — specs/performance.md §3.2
    keyword_index_threshold: int = DEFAULT_KEYWORD_INDEX_THRESHOLD
    candidates_per_source: int = 20
    #: depth of each chat-archive list (keyword and one per context kind) before fusion: RRF over
    #: lists cut at 20 scores a turn ranked 25th in one list as if that list had not found it, so
    #: a turn two lists rank fairly well loses to one list's noise at its top; 50 measured in
    #: ``specs/memory-longterm.md`` ("Depth of the fused lists"). Memory lists keep
    #: ``candidates_per_source`` (on PostgreSQL it also sets the HNSW ``ef_search``)
    message_candidates: int = 50
    rrf_k: int = 60
    #: weighted RRF: list name (semantic, keyword, messages, message_semantic) → weight (> 0),
    #: 1 for a list not named
    fusion_weights: Mapping[str, float] = field(default_factory=dict)
    #: a question naming a participant of the conversation looks first at what they said
    #: (``speaker_focus``; message lists only)
    speaker_focus: bool = True
    #: chat-archive semantic list: cosine after removing the mean of the scope's vectors
    #: (``message_index.semantic``)
    centre_vectors: bool = True
    extraction_max_attempts: int = 5
    extraction_retry_base_s: float = 1.0
    extraction_timeout_s: float = 120.0
    extra_params: Mapping[str, Any] = field(default_factory=dict)
    #: how the embedding model tells queries from documents (prefixes or ``input_type``)
    embedding_modes: EmbeddingModes = SYMMETRIC
    #: embed chat messages (user/assistant text, with their context) in the background
    index_messages: bool = True
    #: what a message's embedded texts carry, one vector each: "full" (date, the turn it answers,
    #: speaker), "date-speaker", or "none" (the text alone); see ``context_text``. The first is
    #: searched as the ``message_semantic`` list, each other one as ``message_semantic:<context>``
    #: (all fused with the keyword list), so a turn is found whether its meaning is in itself or
    #: in the turn it answers
    message_contexts: tuple[str, ...] = ("full", "date-speaker")
    #: optional second stage through ``litellm.arerank`` (off unless a model is named)
    rerank_model: str | None = None
    rerank_api_base: str | None = None
    rerank_api_key: str | None = None
    rerank_candidates: int = 30  # fused candidates handed to the reranker
    rerank_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        if not 0.0 < self.dedup_threshold <= 1.0:
            raise LongTermMemoryError("dedup_threshold must be in (0, 1]")
        if (self.candidates_per_source < 1 or self.message_candidates < 1 or self.rrf_k < 1
                or self.extraction_max_attempts < 1 or self.rerank_candidates < 1):
            raise LongTermMemoryError("candidates_per_source, message_candidates, rrf_k, extraction_max_attempts "
                                      "and rerank_candidates must be ≥ 1")
        if any(not isinstance(weight, (int, float)) or isinstance(weight, bool) or not 0 < weight < float("inf")
               for weight in self.fusion_weights.values()):
            raise LongTermMemoryError("fusion_weights must map list names to positive numbers")
        if isinstance(self.message_contexts, str):  # one context named in a config file
            object.__setattr__(self, "message_contexts", (self.message_contexts,))
        object.__setattr__(self, "message_contexts", tuple(self.message_contexts))
        if (not self.message_contexts or len(set(self.message_contexts)) != len(self.message_contexts)
                or any(context not in MESSAGE_CONTEXTS for context in self.message_contexts)):
            raise LongTermMemoryError(f"message_contexts must name distinct contexts of {list(MESSAGE_CONTEXTS)}")
