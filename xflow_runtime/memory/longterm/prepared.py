"""Statements kept prepared in a PostgreSQL session (SQL ``PREPARE`` / ``EXECUTE``), so a statement
whose text repeats on a connection is planned once, not at every run.

Why not psycopg's own prepared statements: psycopg forgets (and deallocates) them at every
``ROLLBACK``, and every search ends with one (``LongTermMemory._read``, the pool's reset), so they
never reach the server's plan cache. A session's SQL-level prepared statement survives rollbacks;
the server then keeps its generic plan once five runs show it costs what the custom ones cost
(``plan_cache_mode = auto``), and a run costs no planning.

* **Registry**: the names prepared on a DBAPI connection are kept in its pool record's ``info``
  (they live as long as the server session); a name is a hash of the statement.
* **At most** ``MAX_PREPARED`` **a connection**: the least recently used one is deallocated.
* **Arguments are literals** (``EXECUTE`` takes no bind parameters): text, quoted by ``sql_text``.
* **A session that lost its statements** (``DISCARD ALL``; psycopg's ``DEALLOCATE ALL`` after a
  rollback when it had prepared statements of its own, before ``search_pg.configure_engine``
  turned that off; a pooler in transaction mode that moves the next transaction to another server
  connection) answers "prepared statement does not exist" (or "already exists"): the transaction
  is rolled back (the callers' transactions only read), the session's statements are deallocated
  so the registry is true again, and the statement runs unprepared this time. After
  ``MAX_MISSES`` such misses an engine stops preparing (a pooler; a warning says so).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from xflow_runtime.memory.longterm.sql_text import quoted_for_driver

_log = logging.getLogger("xflow_runtime.memory.longterm")
_INFO_KEY = "xflow_prepared_statements"
_LOST = {"26000", "42P05"}  # prepared statement does not exist / already exists
#: misses after which an engine's searches are no longer prepared
MAX_MISSES = 3
#: prepared statements kept per connection (one per indexed scope × kinds searched on it)
MAX_PREPARED = 64
_PLACEHOLDER = re.compile(r"%%|%\((\w+)\)s")
_misses: dict[str, int] = {}  # engine (URL) → how often its sessions lost a prepared statement


def positional(statement: str, order: Sequence[str]) -> str:
    """``statement`` (pyformat: ``%(name)s``, ``%%``) with ``$n`` for the n-th name of ``order``;
    ``%%`` stays (the driver turns it into ``%``: SQLAlchemy formats every statement it sends)."""
    def replace(match: re.Match[str]) -> str:
        return "%%" if match.group(0) == "%%" else f"${order.index(match.group(1)) + 1}"
    return _PLACEHOLDER.sub(replace, statement)


def name_of(statement: str) -> str:
    return "xflow_q_" + hashlib.sha256(statement.encode()).hexdigest()[:24]


def execute(connection: Connection, statement: str, arguments: Mapping[str, str], order: Sequence[str]) -> Any:
    """Run ``statement`` (pyformat, every parameter text, named in ``order``) as a prepared
    statement of the connection's session; returns the result."""
    engine = str(connection.engine.url)
    if _misses.get(engine, 0) >= MAX_MISSES:
        return connection.exec_driver_sql(statement, dict(arguments))
    names: OrderedDict[str, None] = connection.connection.info.setdefault(_INFO_KEY, OrderedDict())
    name = name_of(statement)
    try:
        if name in names:
            names.move_to_end(name)
        else:
            if len(names) >= MAX_PREPARED:
                connection.exec_driver_sql(f"DEALLOCATE {names.popitem(last=False)[0]}")
            connection.exec_driver_sql(f"PREPARE {name}({', '.join('text' for _ in order)}) AS "
                                       + positional(statement, order))
            names[name] = None
        return connection.exec_driver_sql(f"EXECUTE {name}({', '.join(quoted_for_driver(arguments[n]) for n in order)})")
    except DBAPIError as exc:
        if getattr(exc.orig, "sqlstate", None) not in _LOST:
            raise
        _misses[engine] = _misses.get(engine, 0) + 1
        if _misses[engine] == MAX_MISSES:
            _log.warning("the database sessions lost prepared search statements %d times (a pooler in "
                         "transaction mode?): searches of this store are planned at every run from now on",
                         MAX_MISSES)
        connection.rollback()
        connection.exec_driver_sql("DEALLOCATE ALL")
        names.clear()
        return connection.exec_driver_sql(statement, dict(arguments))
