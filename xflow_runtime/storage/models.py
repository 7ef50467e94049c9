"""The tables of chat memory. Names are prefixed ``xflow_`` to live beside the user's tables.

Every row carries its tenant, agent, user and session, so any query can be (and is) filtered by
scope without a join. The primary key ``(chat_id, sequence)`` is the index the window reads
newest-first as a range scan. ``xflow_chats.last_sequence`` is the per-chat counter that
appending transactions lock and bump, so sequences have no gaps and no duplicates.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (JSON, BigInteger, DateTime, ForeignKey, Index, Integer, MetaData, String,
                        UniqueConstraint)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Chat(Base):
    __tablename__ = "xflow_chats"
    __table_args__ = (
        UniqueConstraint("tenant_id", "agent_id", "user_id", "memory_id", name="uq_xflow_chats_scope"),
        Index("ix_xflow_chats_user", "tenant_id", "user_id", "updated_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(255))
    agent_id: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[str] = mapped_column(String(255))  # "" = anonymous
    memory_id: Mapped[str] = mapped_column(String(512))  # "" = the user's rolling chat
    title: Mapped[str | None] = mapped_column(String(200))
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    last_sequence: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ChatMessage(Base):
    __tablename__ = "xflow_chat_messages"

    chat_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("xflow_chats.id", ondelete="CASCADE"), primary_key=True)
    sequence: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    turn_id: Mapped[str] = mapped_column(String(32))
    tenant_id: Mapped[str] = mapped_column(String(255))
    agent_id: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[str] = mapped_column(String(255))
    session_id: Mapped[str] = mapped_column(String(512))
    role: Mapped[str] = mapped_column(String(16))
    #: the message without its role: content, tool_calls, tool_call_id, name
    parts: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: {encoding name: raw token count incl. per-message overhead}, filled lazily per encoding
    token_counts: Mapped[dict[str, int]] = mapped_column(JSON, default=dict)
    position_in_turn: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


__all__ = ["Base", "Chat", "ChatMessage", "utcnow"]
