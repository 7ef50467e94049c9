"""message context vectors: a chat message gets one vector per context kind (the turn with the
turn it answers, and the turn with date and speaker only), searched as separate lists

Revision ID: 0010_message_context_vectors
Revises: 0009_scope_vector_indexes

``context`` joins the primary key (chat_id, sequence, context) and the scope index, so vectors
of different context kinds are never compared. Rows already there were embedded with the
default context, ``full``; the other kind is pending until the background indexer (or
``xflow memory reindex``) embeds it. Batch mode: SQLite changes a primary key by copying the table.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_message_context_vectors"
down_revision = "0009_scope_vector_indexes"
branch_labels = None
depends_on = None

_TABLE = "xflow_message_embeddings"
_PK = "pk_xflow_message_embeddings"
_SCOPE = "ix_xflow_message_embeddings_scope"
_SCOPE_COLUMNS = ["tenant_id", "agent_id", "user_id", "embedding_model", "embedding_dim"]


def upgrade() -> None:
    op.drop_index(_SCOPE, table_name=_TABLE)
    with op.batch_alter_table(_TABLE, recreate="auto") as batch:
        batch.add_column(sa.Column("context", sa.String(16), nullable=False, server_default="full"))
        batch.drop_constraint(_PK, type_="primary")
        batch.create_primary_key(_PK, ["chat_id", "sequence", "context"])
    op.create_index(_SCOPE, _TABLE, [*_SCOPE_COLUMNS, "context"])


def downgrade() -> None:
    op.drop_index(_SCOPE, table_name=_TABLE)
    op.execute(sa.text(f"DELETE FROM {_TABLE} WHERE context <> 'full'"))
    with op.batch_alter_table(_TABLE, recreate="auto") as batch:
        batch.drop_constraint(_PK, type_="primary")
        batch.create_primary_key(_PK, ["chat_id", "sequence"])
        batch.drop_column("context")
    op.create_index(_SCOPE, _TABLE, _SCOPE_COLUMNS)
