"""Where a runtime keeps chat memory, and the one :class:`ChatMemory` it opens lazily.

The URL rule (``specs/python-api.md``):

- PostgreSQL: chat memory lives in the same database as the durable store (its own tables).
- SQLite: chat memory is the file ``xflow.db`` next to the durable store's file (by default
  ``./.xflow/xflow.sqlite`` → ``./.xflow/xflow.db``, which is also the default of
  ``xflow memory``). DBOS and our migrations each manage their own file.

Nothing here imports SQLAlchemy or DBOS until the first agent state asks for its history.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, Sequence

#: The durable engine's default store (``engine.durable_names.DEFAULT_DATABASE_URL``).
DEFAULT_DURABLE_URL = "sqlite:///.xflow/xflow.sqlite"
CHAT_MEMORY_FILE = "xflow.db"
#: Tenant of instances started without one.
DEFAULT_TENANT = "default"


def chat_memory_url(database_url: str | None) -> str:
    """The chat-memory URL belonging to a durable-store URL (``None``: ``$XFLOW_DATABASE_URL``,
    else the default store)."""
    url = database_url or os.environ.get("XFLOW_DATABASE_URL") or DEFAULT_DURABLE_URL
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://"):]
    if url.startswith("sqlite:///"):
        path = Path(url[len("sqlite:///"):])
        return f"sqlite:///{path.resolve().parent / CHAT_MEMORY_FILE}"
    return url


class LazyChatMemory:
    """Opens the runtime's one :class:`~xflow_runtime.memory.chat.ChatMemory` when the first agent
    state loads or stores history (opening migrates the schema: blocking work, off the loop)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._memory: Any = None
        self._opening = asyncio.Lock()

    async def memory(self) -> Any:
        if self._memory is None:
            async with self._opening:
                if self._memory is None:
                    from xflow_runtime.memory.chat import ChatMemory

                    self._memory = await asyncio.to_thread(ChatMemory.open, self.url)
        return self._memory

    @property
    def opened(self) -> bool:
        return self._memory is not None

    async def load_window(self, scope: Any, policy: Any, *, model: str | None) -> list[dict[str, Any]]:
        return await (await self.memory()).load_window(scope, policy, model=model)

    async def append_turn(self, scope: Any, messages: Sequence[Any], *, model: str | None) -> Any:
        return await (await self.memory()).append_turn(scope, messages, model=model)

    def close(self) -> None:
        memory, self._memory = self._memory, None
        if memory is not None:
            memory.close()
