"""worker heartbeats: one row per worker process of a fleet, for dead-worker takeover; and the
fleet-wide LLM rate-limit windows

Revision ID: 0006_worker_heartbeats
Revises: 0005_message_embeddings

``heartbeat_at`` is always written with the database's clock (``now()``), so workers' clocks never
matter; ``state`` is running → draining → exited, or dead → recovered when the reaper took its
instances over (specs/deployment.md). ``xflow_rate_windows`` counts LLM calls per limit key
(a provider or a model) per fixed window (``window_no`` = database epoch seconds // period).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_worker_heartbeats"
down_revision = "0005_message_embeddings"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "xflow_workers",
        sa.Column("executor_id", sa.String(255), primary_key=True),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("app_version", sa.String(255), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
    )
    op.create_index("ix_xflow_workers_state", "xflow_workers", ["state", "heartbeat_at"])
    op.create_table(
        "xflow_rate_windows",
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("window_no", sa.BigInteger(), nullable=False),
        sa.Column("used", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key", "window_no", name="pk_xflow_rate_windows"),
    )


def downgrade() -> None:
    op.drop_table("xflow_rate_windows")
    op.drop_index("ix_xflow_workers_state", table_name="xflow_workers")
    op.drop_table("xflow_workers")
