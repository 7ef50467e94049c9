"""long-term memory: memories/facts with embeddings, extraction jobs, subjects; full-text search

Revision ID: 0002_longterm_memory
Revises: 0001_chat_memory

PostgreSQL: pgvector's ``vector`` column (any dimension; HNSW indexes are created per embedding
model on first use, see ``search_sql.ensure_vector_index``), a stored generated ``search_vector``
(``to_tsvector('simple', title || content)``) with a GIN index, and a GIN expression index over
chat messages' content.
SQLite: FTS5 tables kept in step by triggers (memories keyed by ``row_key``; chat messages by
rowid, joined back on ``(chat_id, sequence)``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from xflow_runtime.storage.longterm_models import EmbeddingType

revision = "0002_longterm_memory"
down_revision = "0001_chat_memory"
branch_labels = None
depends_on = None

_MEMORY_TEXT = "coalesce(title, '') || ' ' || content"
_MESSAGE_TEXT = "coalesce(parts->>'content', '')"

_SQLITE_FTS = [
    "CREATE VIRTUAL TABLE xflow_memories_fts USING fts5(title, content)",
    """CREATE TRIGGER xflow_memories_fts_insert AFTER INSERT ON xflow_memories BEGIN
         INSERT INTO xflow_memories_fts(rowid, title, content)
         VALUES (new.row_key, coalesce(new.title, ''), new.content);
       END""",
    """CREATE TRIGGER xflow_memories_fts_update AFTER UPDATE OF title, content ON xflow_memories BEGIN
         UPDATE xflow_memories_fts SET title = coalesce(new.title, ''), content = new.content
         WHERE rowid = old.row_key;
       END""",
    """CREATE TRIGGER xflow_memories_fts_delete AFTER DELETE ON xflow_memories BEGIN
         DELETE FROM xflow_memories_fts WHERE rowid = old.row_key;
       END""",
    "CREATE VIRTUAL TABLE xflow_chat_messages_fts USING fts5(text, chat_id UNINDEXED, sequence UNINDEXED)",
    """CREATE TRIGGER xflow_chat_messages_fts_insert AFTER INSERT ON xflow_chat_messages BEGIN
         INSERT INTO xflow_chat_messages_fts(rowid, text, chat_id, sequence)
         VALUES (new.rowid, coalesce(json_extract(new.parts, '$.content'), ''), new.chat_id, new.sequence);
       END""",
    """CREATE TRIGGER xflow_chat_messages_fts_delete AFTER DELETE ON xflow_chat_messages BEGIN
         DELETE FROM xflow_chat_messages_fts WHERE rowid = old.rowid;
       END""",
    """INSERT INTO xflow_chat_messages_fts(rowid, text, chat_id, sequence)
       SELECT rowid, coalesce(json_extract(parts, '$.content'), ''), chat_id, sequence
       FROM xflow_chat_messages""",
]


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.create_table(
        "xflow_memories",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("row_key", sa.BigInteger(), nullable=False),
        sa.Column("tenant_id", sa.String(255), nullable=False),
        sa.Column("agent_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("title", sa.String(200), nullable=True),
        sa.Column("title_key", sa.String(200), nullable=True),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("category", sa.String(32), nullable=True),
        sa.Column("importance", sa.Integer(), nullable=True),
        sa.Column("source", sa.String(512), nullable=True),
        sa.Column("embedding", EmbeddingType(), nullable=True),
        sa.Column("embedding_model", sa.String(255), nullable=True),
        sa.Column("embedding_dim", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_xflow_memories"),
        sa.UniqueConstraint("row_key", name="uq_xflow_memories_row_key"),
        sa.UniqueConstraint("tenant_id", "agent_id", "user_id", "kind", "title_key",
                            name="uq_xflow_memories_title"),
    )
    op.create_index("ix_xflow_memories_scope", "xflow_memories",
                    ["tenant_id", "agent_id", "user_id", "kind", "created_at"])
    op.create_index("ix_xflow_memories_user", "xflow_memories", ["tenant_id", "user_id"])
    # counts a scope's vectors of one model from the index alone (picks exact vs HNSW search)
    op.create_index("ix_xflow_memories_vectors", "xflow_memories",
                    ["tenant_id", "agent_id", "user_id", "embedding_model", "embedding_dim", "kind"])
    op.create_table(
        "xflow_extraction_jobs",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("tenant_id", sa.String(255), nullable=False),
        sa.Column("agent_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("dedup_key", sa.String(600), nullable=False),
        sa.Column("source", sa.String(512), nullable=True),
        sa.Column("model", sa.String(255), nullable=False),
        sa.Column("messages", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("erasure_epoch", sa.BigInteger(), nullable=False),
        sa.Column("run_after", sa.DateTime(timezone=True), nullable=False),
        sa.Column("facts_written", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_xflow_extraction_jobs"),
        sa.UniqueConstraint("tenant_id", "agent_id", "user_id", "dedup_key",
                            name="uq_xflow_extraction_jobs_turn"),
    )
    op.create_index("ix_xflow_extraction_jobs_ready", "xflow_extraction_jobs", ["status", "run_after"])
    op.create_index("ix_xflow_extraction_jobs_user", "xflow_extraction_jobs", ["tenant_id", "user_id"])
    op.create_table(
        "xflow_memory_subjects",
        sa.Column("subject_key", sa.String(64), nullable=False),
        sa.Column("consent", sa.Boolean(), nullable=True),
        sa.Column("erasure_epoch", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("subject_key", name="pk_xflow_memory_subjects"),
    )
    if dialect == "postgresql":
        # stored, so ranking and matching never re-parse content at query time
        op.execute(f"ALTER TABLE xflow_memories ADD COLUMN search_vector tsvector "
                   f"GENERATED ALWAYS AS (to_tsvector('simple', {_MEMORY_TEXT})) STORED")
        op.execute("CREATE INDEX ix_xflow_memories_fts ON xflow_memories USING gin (search_vector)")
        op.execute(f"CREATE INDEX ix_xflow_chat_messages_fts ON xflow_chat_messages "
                   f"USING gin (to_tsvector('simple', {_MESSAGE_TEXT}))")
        op.create_index("ix_xflow_chats_scope_lt", "xflow_chats", ["tenant_id", "agent_id", "user_id"])
    elif dialect == "sqlite":
        for statement in _SQLITE_FTS:
            op.execute(statement)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for name in ("xflow_chat_messages_fts_insert", "xflow_chat_messages_fts_delete"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS xflow_chat_messages_fts")
        op.execute("DROP TABLE IF EXISTS xflow_memories_fts")
    elif dialect == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_xflow_chat_messages_fts")
        op.drop_index("ix_xflow_chats_scope_lt", table_name="xflow_chats")
    op.drop_table("xflow_memory_subjects")
    op.drop_table("xflow_extraction_jobs")
    op.drop_table("xflow_memories")
