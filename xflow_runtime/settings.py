"""One rule for where things are: the durable store, and chat + long-term memory.

Every entry point asks this module — ``xflow run``/``chat``/``resume``/``list``/``show``, every
``xflow memory …`` command, ``Runtime``, ``ChatMemory.open()``/``LongTermMemory.open()`` without a
URL, and the erasure/export functions — so a command finds what a run stored:

- the setting: an explicit URL (``--db``, ``database_url=``), else ``$XFLOW_DATABASE_URL``, else
  SQLite ``./.xflow/xflow.sqlite``; ``postgres://`` is a spelling of ``postgresql://``;
- the **durable store** (DBOS's system database) is that URL (a SQLite path made absolute);
- **memory** (chat histories, long-term memories, facts, consent, extraction jobs) is the same
  database on PostgreSQL (its own ``xflow_`` tables), and on SQLite the file ``xflow.db`` in the
  durable store's directory: DBOS and our migrations each own their file, and chat writes never
  queue behind the engine's SQLite write lock.

Pure: no I/O beyond making a relative path absolute; imports nothing heavy (specs/memory.md §1.7).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ENVIRONMENT_VARIABLE = "XFLOW_DATABASE_URL"
#: The durable store when nothing is set (relative to the working directory).
DEFAULT_DURABLE_URL = "sqlite:///.xflow/xflow.sqlite"
#: The memory file beside a SQLite durable store.
MEMORY_FILE = "xflow.db"

Origin = Literal["explicit", "environment", "default"]


@dataclass(frozen=True)
class StoreLocations:
    """Where one setting puts the durable store and memory, and where the setting came from
    (for messages such as "no memory tables at … (from $XFLOW_DATABASE_URL)")."""

    durable_url: str
    memory_url: str
    origin: Origin

    @property
    def origin_text(self) -> str:
        return {"explicit": "from --db / database_url", "environment": f"from ${ENVIRONMENT_VARIABLE}",
                "default": "the default"}[self.origin]


def locate(url: str | None = None) -> StoreLocations:
    """The locations belonging to ``url`` (``None``: ``$XFLOW_DATABASE_URL``, else the default)."""
    origin: Origin = "explicit"
    if not url:
        url = os.environ.get(ENVIRONMENT_VARIABLE) or None
        origin = "environment" if url else "default"
    durable = _normalise(url or DEFAULT_DURABLE_URL)
    return StoreLocations(durable, memory_url_of(durable), origin)


def memory_url_of(durable_url: str) -> str:
    """The memory database that belongs to a (normalised) durable-store URL."""
    path = sqlite_path(durable_url)
    if path is None:
        return durable_url
    return f"{durable_url.split(':///', 1)[0]}:///{path.parent / MEMORY_FILE}"


def sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite…:///FILE`` URL (``None`` for other databases and in-memory SQLite)."""
    if not url.startswith("sqlite") or ":///" not in url:
        return None
    database = url.split(":///", 1)[1].split("?", 1)[0]
    if not database or database == ":memory:" or "mode=memory" in url:
        return None
    return Path(database).expanduser()


def redact(url: str) -> str:
    """A URL safe to print: the password replaced."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        credentials, host = rest.rsplit("@", 1)
        user = credentials.split(":", 1)[0]
        return f"{scheme}://{user}:***@{host}"
    return url


def _normalise(url: str) -> str:
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://"):]
    path = sqlite_path(url)
    if path is not None and not path.is_absolute():
        scheme, rest = url.split(":///", 1)
        query = rest[len(rest.split("?", 1)[0]):]
        url = f"{scheme}:///{path.resolve()}{query}"
    return url
