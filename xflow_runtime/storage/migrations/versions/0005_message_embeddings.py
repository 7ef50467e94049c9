"""message embeddings: one vector per chat message (its contextual text), for semantic search
over the chat archive

Revision ID: 0005_message_embeddings
Revises: 0004_user_tasks

The rows go with their message (foreign key ``ON DELETE CASCADE``: deleting a chat, clearing a
memoryId or erasing a user removes them). ``embedding_model`` is the space key (model + its
query/document modes, ``embedding_modes.space_key``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from xflow_runtime.storage.longterm_models import EmbeddingType

revision = "0005_message_embeddings"
down_revision = "0004_user_tasks"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "xflow_message_embeddings",
        sa.Column("chat_id", sa.String(32), nullable=False),
        sa.Column("sequence", sa.BigInteger(), nullable=False),
        sa.Column("tenant_id", sa.String(255), nullable=False),
        sa.Column("agent_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("embedding", EmbeddingType(), nullable=True),  # NULL: no text to embed
        sa.Column("embedding_model", sa.String(255), nullable=True),
        sa.Column("embedding_dim", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("chat_id", "sequence", name="pk_xflow_message_embeddings"),
        sa.ForeignKeyConstraint(["chat_id", "sequence"], ["xflow_chat_messages.chat_id", "xflow_chat_messages.sequence"],
                                ondelete="CASCADE", name="fk_xflow_message_embeddings_message"),
    )
    op.create_index("ix_xflow_message_embeddings_scope", "xflow_message_embeddings",
                    ["tenant_id", "agent_id", "user_id", "embedding_model", "embedding_dim"])
    op.create_index("ix_xflow_message_embeddings_user", "xflow_message_embeddings", ["tenant_id", "user_id"])


def downgrade() -> None:
    op.drop_table("xflow_message_embeddings")
