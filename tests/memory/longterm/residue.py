"""Scan every table of a database (SQLite FTS shadow tables included) for a string."""

from __future__ import annotations

from sqlalchemy import Engine, inspect, text


def table_names(engine: Engine) -> list[str]:
    if engine.dialect.name == "sqlite":
        with engine.connect() as connection:
            return list(connection.execute(text(
                "SELECT name FROM sqlite_master WHERE type = 'table'")).scalars())
    return inspect(engine).get_table_names()


def rows_containing(engine: Engine, needle: str) -> dict[str, int]:
    """Table → number of rows with ``needle`` in any column (text, JSON or bytes)."""
    found: dict[str, int] = {}
    raw = needle.encode()
    with engine.connect() as connection:
        for table in table_names(engine):
            for row in connection.execute(text(f'SELECT * FROM "{table}"')):
                for value in row:
                    if value is None:
                        continue
                    if isinstance(value, (bytes, bytearray, memoryview)):
                        hit = raw in bytes(value)
                    else:
                        hit = needle in str(value)
                    if hit:
                        found[table] = found.get(table, 0) + 1
                        break
    return found
