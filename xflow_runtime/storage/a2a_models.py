"""Push-notification configs of the tasks ``xflow serve --a2a`` serves (specs/a2a.md §5): where to
POST a task's changes. Kept in the chat-memory database beside the task inbox; the task itself is
the instance (the durable store), never copied here."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from xflow_runtime.storage.models import Base, utcnow


class A2APushConfig(Base):
    __tablename__ = "xflow_a2a_push_configs"
    __table_args__ = (Index("ix_xflow_a2a_push_configs_task", "tenant_id", "task_id"),)

    task_id: Mapped[str] = mapped_column(String(255), primary_key=True)  # = the instance id
    id: Mapped[str] = mapped_column(String(255), primary_key=True)       # the config id (per task)
    tenant_id: Mapped[str] = mapped_column(String(255))
    url: Mapped[str] = mapped_column(Text)
    # The caller's own credentials for its webhook, sent back to it as given (never logged).
    token: Mapped[str | None] = mapped_column(Text, nullable=True)
    auth_scheme: Mapped[str | None] = mapped_column(String(64), nullable=True)
    auth_credentials: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
