"""requests of asynchronous aiagentproxy states

Revision ID: 0007_agent_proxy_requests
Revises: 0005_message_embeddings
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_agent_proxy_requests"
down_revision = "0006_worker_heartbeats"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "xflow_agent_proxy_requests",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("tenant_id", sa.String(255), nullable=False),
        sa.Column("instance_id", sa.String(255), nullable=False),
        sa.Column("workflow_id", sa.String(255), nullable=False),
        sa.Column("state_name", sa.String(255), nullable=False),
        sa.Column("agent_name", sa.String(255), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("answer", sa.JSON(), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_xflow_agent_proxy_requests"),
    )
    op.create_index("ix_xflow_agent_proxy_requests_instance", "xflow_agent_proxy_requests", ["instance_id"])


def downgrade() -> None:
    op.drop_index("ix_xflow_agent_proxy_requests_instance", table_name="xflow_agent_proxy_requests")
    op.drop_table("xflow_agent_proxy_requests")
