"""Running coroutines together: all of them, at least N of them, or racing a timeout.

Timers are ``port.sleep`` calls, so timeouts run on the engine's clock (virtual in tests, durable
in the DBOS engine) instead of the wall clock.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Sequence

from xflow_runtime.engine.port import EnginePort
from xflow_runtime.interpreter.failures import Failure


async def within(port: EnginePort, seconds: float | None, awaitable: Awaitable[Any], what: str) -> Any:
    """Await ``awaitable``; past ``seconds`` cancel it and raise the timeout :class:`Failure`."""
    if seconds is None:
        return await awaitable
    work = asyncio.ensure_future(awaitable)
    timer = asyncio.ensure_future(port.sleep(seconds))
    try:
        await asyncio.wait((work, timer), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        await _cancel((work, timer))
        raise
    if work.done():
        await _cancel((timer,))
        return work.result()
    await _cancel((work,))
    raise Failure.timeout(what, seconds)


async def all_of(coroutines: Sequence[Awaitable[Any]]) -> list[Any]:
    """Results in input order; the first failure cancels the others and is raised."""
    if len(coroutines) <= 1:
        return [await coroutine for coroutine in coroutines]
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except asyncio.CancelledError:
        await _cancel(tasks)
        raise
    failed = [task for task in tasks if task.done() and not task.cancelled() and task.exception() is not None]
    if failed:
        await _cancel(pending)
        raise failed[0].exception()  # type: ignore[misc]
    return [task.result() for task in tasks]


async def at_least(coroutines: Sequence[Awaitable[Any]], needed: int) -> list[tuple[int, Any]]:
    """The first ``needed`` results to finish, as (index, result) sorted by index; the rest are
    cancelled. A failure before that point cancels everything and is raised."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    finished: list[tuple[int, Any]] = []
    pending = set(tasks)
    try:
        while len(finished) < needed:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in sorted(done, key=tasks.index):
                if task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
                finished.append((tasks.index(task), task.result()))
    finally:
        await _cancel(pending)
    return sorted(finished, key=lambda item: item[0])


async def _cancel(tasks: Any) -> None:
    tasks = [task for task in tasks if not task.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)
