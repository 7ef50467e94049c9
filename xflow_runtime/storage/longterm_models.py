"""The tables of long-term memory (agent memories, extracted facts, extraction jobs, subjects).

* ``xflow_memories`` — one row per agent memory (``kind='memory'``, unique title per scope) or
  extracted fact (``kind='fact'``, no title). The embedding lives in the row with the model id
  and dimension that produced it, so vectors of different models are never compared and an
  erased row takes its vector with it. Full-text search: a GIN expression index over
  ``to_tsvector('simple', …)`` on PostgreSQL, an FTS5 table kept by triggers on SQLite.
* ``xflow_extraction_jobs`` — durable fact-extraction work (pending/running/done/failed).
* ``xflow_memory_subjects`` — per (tenant, user): consent and the erasure epoch. Keyed by a
  SHA-256 of tenant and user, so a tombstone kept after erasure holds no user identifier.
* ``xflow_message_embeddings`` — one vector per embedded chat message (its contextual text,
  ``context_text.message_text``), keyed like the message and deleted with it (foreign key
  ``ON DELETE CASCADE``); scope columns copied so a search never leaves the scope.
"""

from __future__ import annotations

from array import array
from datetime import datetime
from typing import Any

from sqlalchemy import (JSON, BigInteger, Boolean, DateTime, ForeignKeyConstraint, Index, Integer,
                        LargeBinary, String, Text, UniqueConstraint)
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.types import TypeDecorator, UserDefinedType

from xflow_runtime.storage.models import Base, utcnow


class PgVector(UserDefinedType):
    """pgvector's ``vector`` without a fixed dimension (one column holds any model's vectors;
    HNSW indexes are per model, over ``embedding::vector(dim)``)."""

    cache_ok = True

    def get_col_spec(self, **_: Any) -> str:
        return "vector"

    def bind_expression(self, bindvalue: Any) -> Any:
        from sqlalchemy import cast

        return cast(bindvalue, self)


class EmbeddingType(TypeDecorator):
    """A list of floats: pgvector ``vector`` on PostgreSQL, float32 bytes elsewhere."""

    impl = LargeBinary
    cache_ok = True

    def load_dialect_impl(self, dialect: Any) -> Any:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(PgVector())
        return dialect.type_descriptor(LargeBinary())

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        if value is None:
            return None
        if dialect.name == "postgresql":
            return vector_literal(value)
        return array("f", value).tobytes()

    def process_result_value(self, value: Any, dialect: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, str):
            return [float(part) for part in value.strip("[]").split(",") if part]
        floats = array("f")
        floats.frombytes(bytes(value))
        return floats.tolist()


def vector_literal(values: Any) -> str:
    """pgvector's text form ``[1.0,2.0]``."""
    return "[" + ",".join(repr(float(value)) for value in values) + "]"


class LongTermMemoryRow(Base):
    __tablename__ = "xflow_memories"
    __table_args__ = (
        UniqueConstraint("tenant_id", "agent_id", "user_id", "kind", "title_key",
                         name="uq_xflow_memories_title"),
        Index("ix_xflow_memories_scope", "tenant_id", "agent_id", "user_id", "kind", "created_at"),
        Index("ix_xflow_memories_user", "tenant_id", "user_id"),
        Index("ix_xflow_memories_vectors", "tenant_id", "agent_id", "user_id", "embedding_model",
              "embedding_dim", "kind"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    #: random 63-bit key of the row's SQLite FTS5 entry (a rowid VACUUM cannot renumber)
    row_key: Mapped[int] = mapped_column(BigInteger, unique=True)
    tenant_id: Mapped[str] = mapped_column(String(255))
    agent_id: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[str] = mapped_column(String(255))  # "" = the agent's own (no end user)
    kind: Mapped[str] = mapped_column(String(16))  # "memory" | "fact"
    title: Mapped[str | None] = mapped_column(String(200))
    #: casefolded, whitespace-collapsed title: the upsert key (NULL for facts, never unique-clashes)
    title_key: Mapped[str | None] = mapped_column(String(200))
    content: Mapped[str] = mapped_column(Text)
    tags: Mapped[list[str]] = mapped_column(JSON, default=list)
    category: Mapped[str | None] = mapped_column(String(32))
    importance: Mapped[int | None] = mapped_column(Integer)
    source: Mapped[str | None] = mapped_column(String(512))
    embedding: Mapped[list[float] | None] = mapped_column(EmbeddingType)
    embedding_model: Mapped[str | None] = mapped_column(String(255))
    embedding_dim: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ExtractionJobRow(Base):
    __tablename__ = "xflow_extraction_jobs"
    __table_args__ = (
        UniqueConstraint("tenant_id", "agent_id", "user_id", "dedup_key", name="uq_xflow_extraction_jobs_turn"),
        Index("ix_xflow_extraction_jobs_ready", "status", "run_after"),
        Index("ix_xflow_extraction_jobs_user", "tenant_id", "user_id"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(255))
    agent_id: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[str] = mapped_column(String(255))
    #: one job per conversation state: (source, user-turn count)
    dedup_key: Mapped[str] = mapped_column(String(600))
    source: Mapped[str | None] = mapped_column(String(512))
    model: Mapped[str] = mapped_column(String(255))
    messages: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16))  # pending | running | done | failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    erasure_epoch: Mapped[int] = mapped_column(BigInteger, default=0)
    run_after: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    facts_written: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class MemorySubjectRow(Base):
    __tablename__ = "xflow_memory_subjects"

    subject_key: Mapped[str] = mapped_column(String(64), primary_key=True)
    consent: Mapped[bool | None] = mapped_column(Boolean)  # None: never stated (allowed)
    erasure_epoch: Mapped[int] = mapped_column(BigInteger, default=0)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class MessageEmbeddingRow(Base):
    __tablename__ = "xflow_message_embeddings"
    __table_args__ = (
        ForeignKeyConstraint(["chat_id", "sequence"], ["xflow_chat_messages.chat_id", "xflow_chat_messages.sequence"],
                             ondelete="CASCADE", name="fk_xflow_message_embeddings_message"),
        Index("ix_xflow_message_embeddings_scope", "tenant_id", "agent_id", "user_id", "embedding_model",
              "embedding_dim", "context"),
        Index("ix_xflow_message_embeddings_user", "tenant_id", "user_id"),
    )

    chat_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    sequence: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    #: what the embedded text carried (``context_text.MESSAGE_CONTEXTS``): one row per context
    context: Mapped[str] = mapped_column(String(16), primary_key=True, server_default="full")
    tenant_id: Mapped[str] = mapped_column(String(255))
    agent_id: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[str] = mapped_column(String(255))
    #: NULL: the message has no text to embed (a tool-call request), so it is not pending
    embedding: Mapped[list[float] | None] = mapped_column(EmbeddingType)
    embedding_model: Mapped[str | None] = mapped_column(String(255))  # the space key (model + modes)
    embedding_dim: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


__all__ = ["EmbeddingType", "ExtractionJobRow", "LongTermMemoryRow", "MemorySubjectRow", "MessageEmbeddingRow",
           "PgVector", "vector_literal"]
