"""Scan every table and every text, JSON or binary column of a database for strings. DBOS's
records are JSON text (``xflow_runtime.engine.serializer``): each value is searched as stored and
as its decoded JSON (escapes undone). A value that is base64 is searched decoded too, but never
unpickled: the store holds no pickle (``tests/engine/test_json_records.py``)."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Iterator

from sqlalchemy import Engine, create_engine, text

#: column types that cannot hold text (everything else is scanned, tsvector and vector included)
_NOT_TEXT = ("integer", "bigint", "smallint", "boolean", "double precision", "real", "numeric",
             "timestamp with time zone", "timestamp without time zone", "date")


def _columns(engine: Engine) -> Iterator[tuple[str, list[str]]]:
    """(qualified table, its columns that can hold text) for every table, every schema but the
    catalogs."""
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            tables = connection.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'")).scalars().all()
            for table in tables:
                columns = [row[1] for row in connection.execute(text(f'PRAGMA table_info("{table}")'))]
                yield f'"{table}"', columns  # SQLite is dynamically typed: every column
            return
        rows = connection.execute(text(
            "SELECT table_schema, table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2, ordinal_position")).all()
    tables: dict[str, list[str]] = {}
    for schema, table, column, data_type in rows:
        columns = tables.setdefault(f'"{schema}"."{table}"', [])
        if data_type not in _NOT_TEXT:
            columns.append(column)
    yield from tables.items()


def decoded_forms(value: Any) -> list[str]:
    """The value as text, as decoded JSON, and decoded from base64 if it is base64."""
    if isinstance(value, memoryview):
        value = bytes(value)
    forms = [value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)]
    try:
        forms.append(repr(json.loads(forms[0])))
    except ValueError:
        pass
    raw = value if isinstance(value, bytes) else str(value).encode()
    try:
        forms.append(base64.b64decode(raw, validate=True).decode("utf-8", "replace"))
    except (binascii.Error, ValueError):
        pass
    return forms


def traces(url: str, needles: list[str]) -> dict[str, int]:
    """``"table.column"`` → number of values holding any of ``needles``, over the whole database."""
    engine = create_engine(url)
    found: dict[str, int] = {}
    try:
        for table, columns in _columns(engine):
            if not columns:
                continue
            with engine.connect() as connection:
                listed = ", ".join(f'"{column}"' for column in columns)
                for row in connection.execute(text(f"SELECT {listed} FROM {table}")):
                    for column, value in zip(columns, row):
                        if value is not None and any(n in form for form in decoded_forms(value) for n in needles):
                            found[f"{table}.{column}"] = found.get(f"{table}.{column}", 0) + 1
    finally:
        engine.dispose()
    return found
