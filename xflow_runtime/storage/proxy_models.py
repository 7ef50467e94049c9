"""Requests to asynchronous ``aiagentproxy`` agents: one row per request an instance sent and
waits on. The row is the truth about the request (answered once, timed out, the answer); the
instance only waits for a wake-up and then reads the row (specs/states-human.md §7)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from xflow_runtime.storage.models import Base, utcnow


class AgentProxyRequest(Base):
    __tablename__ = "xflow_agent_proxy_requests"
    __table_args__ = (Index("ix_xflow_agent_proxy_requests_instance", "instance_id"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # the request id the agent is given
    tenant_id: Mapped[str] = mapped_column(String(255))
    instance_id: Mapped[str] = mapped_column(String(255))
    workflow_id: Mapped[str] = mapped_column(String(255))
    state_name: Mapped[str] = mapped_column(String(255))
    agent_name: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(16))  # waiting | answered | timedOut
    answer: Mapped[Any] = mapped_column(JSON, nullable=True)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
