"""The base of our small stores (user tasks, agent-proxy requests, A2A push configs): a database
URL, opened and migrated on first use, disposed by :meth:`LazyStore.close`.

Importing this module imports nothing of SQLAlchemy, so a store can be built where no database is
touched yet (a runtime that never runs the state type that needs it)."""

from __future__ import annotations

from typing import Any


class LazyStore:
    def __init__(self, url: str) -> None:
        self.url = url
        self._engine: Any = None

    @property
    def engine(self) -> Any:
        """The migrated engine (opened on first use)."""
        if self._engine is None:
            from xflow_runtime.storage.database import open_database

            self._engine = open_database(self.url)
        return self._engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
