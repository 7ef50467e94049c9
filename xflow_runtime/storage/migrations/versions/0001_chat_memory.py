"""chat memory: chats and their messages

Revision ID: 0001_chat_memory
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_chat_memory"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "xflow_chats",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("tenant_id", sa.String(255), nullable=False),
        sa.Column("agent_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("memory_id", sa.String(512), nullable=False),
        sa.Column("title", sa.String(200), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("last_sequence", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_xflow_chats"),
        sa.UniqueConstraint("tenant_id", "agent_id", "user_id", "memory_id",
                            name="uq_xflow_chats_scope"),
    )
    op.create_index("ix_xflow_chats_user", "xflow_chats", ["tenant_id", "user_id", "updated_at"])
    op.create_table(
        "xflow_chat_messages",
        sa.Column("chat_id", sa.String(32), nullable=False),
        sa.Column("sequence", sa.BigInteger(), nullable=False),
        sa.Column("turn_id", sa.String(32), nullable=False),
        sa.Column("tenant_id", sa.String(255), nullable=False),
        sa.Column("agent_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("session_id", sa.String(512), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("parts", sa.JSON(), nullable=False),
        sa.Column("token_counts", sa.JSON(), nullable=False),
        sa.Column("position_in_turn", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["chat_id"], ["xflow_chats.id"], ondelete="CASCADE",
                                name="fk_xflow_chat_messages_chat_id_xflow_chats"),
        sa.PrimaryKeyConstraint("chat_id", "sequence", name="pk_xflow_chat_messages"),
    )


def downgrade() -> None:
    op.drop_table("xflow_chat_messages")
    op.drop_index("ix_xflow_chats_user", table_name="xflow_chats")
    op.drop_table("xflow_chats")
