"""push-notification configs of A2A tasks (xflow serve --a2a)

Revision ID: 0008_a2a_push_configs
Revises: 0005_message_embeddings
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_a2a_push_configs"
down_revision = "0007_agent_proxy_requests"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "xflow_a2a_push_configs",
        sa.Column("task_id", sa.String(255), nullable=False),
        sa.Column("id", sa.String(255), nullable=False),
        sa.Column("tenant_id", sa.String(255), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("token", sa.Text(), nullable=True),
        sa.Column("auth_scheme", sa.String(64), nullable=True),
        sa.Column("auth_credentials", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("task_id", "id", name="pk_xflow_a2a_push_configs"),
    )
    op.create_index("ix_xflow_a2a_push_configs_task", "xflow_a2a_push_configs", ["tenant_id", "task_id"])


def downgrade() -> None:
    op.drop_index("ix_xflow_a2a_push_configs_task", table_name="xflow_a2a_push_configs")
    op.drop_table("xflow_a2a_push_configs")
