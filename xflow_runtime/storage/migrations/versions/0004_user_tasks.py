"""user tasks of usertask states

Revision ID: 0004_user_tasks
Revises: 0003_service_api_keys
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_user_tasks"
down_revision = "0003_service_api_keys"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "xflow_user_tasks",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("tenant_id", sa.String(255), nullable=False),
        sa.Column("instance_id", sa.String(255), nullable=False),
        sa.Column("workflow_id", sa.String(255), nullable=False),
        sa.Column("state_name", sa.String(255), nullable=False),
        sa.Column("task_key", sa.String(255), nullable=False),
        sa.Column("form_key", sa.String(255), nullable=True),
        sa.Column("assignee", sa.String(255), nullable=True),
        sa.Column("candidate_users", sa.JSON(), nullable=False),
        sa.Column("candidate_groups", sa.JSON(), nullable=False),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("input", sa.JSON(), nullable=True),
        sa.Column("form_schema", sa.JSON(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("claimed_by", sa.String(255), nullable=True),
        sa.Column("completed_by", sa.String(255), nullable=True),
        sa.Column("completion", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_xflow_user_tasks"),
    )
    op.create_index("ix_xflow_user_tasks_tenant_status", "xflow_user_tasks", ["tenant_id", "status", "created_at"])
    op.create_index("ix_xflow_user_tasks_instance", "xflow_user_tasks", ["instance_id"])


def downgrade() -> None:
    op.drop_index("ix_xflow_user_tasks_instance", table_name="xflow_user_tasks")
    op.drop_index("ix_xflow_user_tasks_tenant_status", table_name="xflow_user_tasks")
    op.drop_table("xflow_user_tasks")
