"""User tasks (``usertask`` states): one row per task a workflow instance created. The row is
the truth about a task (who may act, who claimed it, how it ended); the instance only waits for
a wake-up event and then reads the row (specs/states-human.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from xflow_runtime.storage.models import Base, utcnow


class UserTask(Base):
    __tablename__ = "xflow_user_tasks"
    __table_args__ = (Index("ix_xflow_user_tasks_tenant_status", "tenant_id", "status", "created_at"),
                      Index("ix_xflow_user_tasks_instance", "instance_id"))

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(255))
    instance_id: Mapped[str] = mapped_column(String(255))
    workflow_id: Mapped[str] = mapped_column(String(255))
    state_name: Mapped[str] = mapped_column(String(255))
    task_key: Mapped[str] = mapped_column(String(255))
    form_key: Mapped[str | None] = mapped_column(String(255), nullable=True)
    assignee: Mapped[str | None] = mapped_column(String(255), nullable=True)
    candidate_users: Mapped[list[str]] = mapped_column(JSON, default=list)
    candidate_groups: Mapped[list[str]] = mapped_column(JSON, default=list)
    due_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    input: Mapped[Any] = mapped_column(JSON, nullable=True)
    form_schema: Mapped[Any] = mapped_column(JSON, nullable=True)
    status: Mapped[str] = mapped_column(String(16))  # open | claimed | completed | deleted | timedOut
    claimed_by: Mapped[str | None] = mapped_column(String(255), nullable=True)
    completed_by: Mapped[str | None] = mapped_column(String(255), nullable=True)
    completion: Mapped[Any] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
