"""The service's own table: API keys. Only the SHA-256 of a key's secret is stored (the secret is
256 random bits, so a plain digest cannot be brute-forced; no salt or slow hash needed)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from xflow_runtime.storage.models import Base, utcnow


class ApiKey(Base):
    __tablename__ = "xflow_api_keys"
    __table_args__ = (Index("ix_xflow_api_keys_tenant", "tenant_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[str | None] = mapped_column(String(255), nullable=True)
    role: Mapped[str] = mapped_column(String(16))  # "service" | "user"
    name: Mapped[str] = mapped_column(String(200))
    secret_sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
