"""Text written into PostgreSQL SQL as a literal, where a bind parameter cannot go: a partial
index's predicate (DDL takes no parameters), a search that repeats that predicate so the planner
can prove the index usable, and the arguments of ``EXECUTE``.

An escape string (``E'…'``, backslash and quote escaped) reads the same whatever the session's
``standard_conforming_strings`` says, so a value cannot end the literal early under either
setting (tenant and user ids come from credentials an identity provider may fill with any text)."""

from __future__ import annotations


def quoted(value: str) -> str:
    """``value`` as a PostgreSQL text literal."""
    if "\x00" in value:
        raise ValueError("text containing a NUL character cannot be written as a SQL literal")
    return "E'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def quoted_for_driver(value: str) -> str:
    """``value`` as a literal inside a statement the driver formats (pyformat: ``%`` doubled)."""
    return quoted(value).replace("%", "%%")
