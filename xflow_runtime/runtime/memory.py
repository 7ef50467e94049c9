"""Where a runtime keeps chat memory, and the one :class:`ChatMemory` it opens lazily.

Where memory lives is the one rule of :mod:`xflow_runtime.settings` (specs/python-api.md).
Nothing here imports SQLAlchemy or DBOS until the first agent state asks for its history.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Sequence

from xflow_runtime.settings import locate

if TYPE_CHECKING:
    from xflow_runtime.memory.chat.memory import ChatMemory


def chat_memory_url(database_url: str | None) -> str:
    """The memory URL belonging to a durable-store URL (``None``: ``$XFLOW_DATABASE_URL``, else
    the default store)."""
    return locate(database_url).memory_url


class LazyChatMemory:
    """Opens the runtime's one :class:`~xflow_runtime.memory.chat.ChatMemory` when the first agent
    state loads or stores history (opening migrates the schema: blocking work, off the loop)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._memory: ChatMemory | None = None
        self._opening = asyncio.Lock()

    async def memory(self) -> ChatMemory:
        if self._memory is None:
            async with self._opening:
                if self._memory is None:
                    from xflow_runtime.memory.chat import ChatMemory

                    self._memory = await asyncio.to_thread(ChatMemory.open, self.url)
        assert self._memory is not None  # noqa: S101 - opened above
        return self._memory

    async def erasure_epoch(self, tenant: str, user: str) -> int:
        """The user's erasure epoch (0 when never erased, or when no memory store exists yet:
        looking creates nothing). Once the store exists it is opened, for this and later reads."""
        if self._memory is None:
            from xflow_runtime.storage.database import database_exists

            if not await asyncio.to_thread(database_exists, self.url):
                return 0
        memory = await self.memory()
        return await asyncio.to_thread(_read_epoch, memory.engine, tenant, user)

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



def _read_epoch(engine: Any, tenant: str, user: str) -> int:
    from xflow_runtime.memory.longterm.privacy import read_subject

    with engine.connect() as connection:
        _, epoch = read_subject(connection, tenant, user)
        connection.rollback()
    return epoch
