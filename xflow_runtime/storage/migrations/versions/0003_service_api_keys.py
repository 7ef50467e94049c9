"""service: API keys (stored as SHA-256 of the secret; the secret itself is shown once)

Revision ID: 0003_service_api_keys
Revises: 0002_longterm_memory
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_service_api_keys"
down_revision = "0002_longterm_memory"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "xflow_api_keys",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("tenant_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("secret_sha256", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_xflow_api_keys"),
    )
    op.create_index("ix_xflow_api_keys_tenant", "xflow_api_keys", ["tenant_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_xflow_api_keys_tenant", table_name="xflow_api_keys")
    op.drop_table("xflow_api_keys")
