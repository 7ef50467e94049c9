"""One background task per event loop, started on demand: the worker of fact extraction and of
message indexing. Runtimes and tests may use one memory object from several loops (each
``asyncio.run``), so a task belongs to the loop that started it."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Coroutine


class PerLoopTask:
    def __init__(self, name: str, drain: Callable[[], Coroutine[Any, Any, None]]):
        self._name = name
        self._drain = drain
        self._tasks: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}

    def kick(self) -> None:
        """Make sure the drain runs on the current event loop (cheap when it does)."""
        loop = asyncio.get_running_loop()
        task = self._tasks.get(loop)
        if task is None or task.done():
            self._tasks[loop] = loop.create_task(self._drain(), name=self._name)

    async def wait_idle(self) -> None:
        """Wait until the current loop's drain has nothing left to do."""
        task = self._tasks.get(asyncio.get_running_loop())
        if task is not None:
            await asyncio.shield(task)

    async def close(self) -> None:
        """Cancel the current loop's drain (unfinished work stays where it is) and forget all."""
        for loop, task in list(self._tasks.items()):
            if loop is asyncio.get_running_loop():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self._tasks.clear()
