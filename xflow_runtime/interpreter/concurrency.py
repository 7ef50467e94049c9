"""Running coroutines together: all of them, at least N of them, or racing a timeout.

Timers are ``port.sleep`` calls, so timeouts run on the engine's clock (virtual in tests, durable
in the DBOS engine) instead of the wall clock.

Every group of tasks starts in its own scopes (:mod:`xflow_runtime.engine.scopes`), so each
task's engine calls have the same names in every run. Where the result depends on which task
finished first — a timer against work, the first N branches, the first failure — the decision is
an *outcome* the engine may record (:class:`~xflow_runtime.engine.port.OutcomeJournal`): a
recovered durable instance then takes the recorded decision instead of racing again, because
replayed work finishes in a different order than live work did.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Awaitable, Sequence

from xflow_runtime.engine.port import EnginePort, OutcomeJournal
from xflow_runtime.engine.scopes import cancel_decided, start_tasks
from xflow_runtime.interpreter.failures import Failure

WORK, TIMER = "work", "timer"


async def within(port: EnginePort, seconds: float | None, awaitable: Awaitable[Any], what: str) -> Any:
    """Await ``awaitable``; past ``seconds`` cancel it and raise the timeout :class:`Failure`."""
    if seconds is None:
        return await awaitable
    key, (work, timer) = start_tasks([awaitable, port.sleep(seconds)], (WORK, TIMER))
    try:
        outcome = await recorded_outcome(port, key)
        if outcome == WORK:
            await asyncio.wait((work,))
        elif outcome is None:
            await asyncio.wait((work, timer), return_when=asyncio.FIRST_COMPLETED)
            outcome = WORK if work.done() else TIMER
        await record_outcome(port, key, outcome)  # a replay records it again, in its place
    except asyncio.CancelledError:
        await _stop((work, timer))
        raise
    if outcome == WORK:
        await cancel_decided((timer,))
        return work.result()
    await cancel_decided((work, timer))
    raise Failure.timeout(what, seconds)


async def all_of(port: EnginePort, coroutines: Sequence[Awaitable[Any]]) -> list[Any]:
    """Results in input order; the first failure cancels the others and is raised."""
    if len(coroutines) <= 1:
        return [await coroutine for coroutine in coroutines]
    key, tasks = start_tasks(coroutines)
    try:
        outcome = await recorded_outcome(port, key)
        if outcome is not None:  # "failed:<index>": that branch failed first
            first = tasks[int(outcome.split(":")[1])]
            await asyncio.wait((first,))
            failed: asyncio.Task[Any] | None = first
        else:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            failed = next((task for task in tasks if _failed(task)), None)
        if failed is not None:
            await record_outcome(port, key, f"failed:{tasks.index(failed)}")
    except asyncio.CancelledError:
        await _stop(tasks)
        raise
    if failed is not None and _failed(failed):
        await cancel_decided(tasks)
        raise failed.exception()  # type: ignore[misc]
    await asyncio.wait(tasks)
    return [task.result() for task in tasks]


async def at_least(port: EnginePort, coroutines: Sequence[Awaitable[Any]], needed: int) -> list[tuple[int, Any]]:
    """The first ``needed`` results to finish, as (index, result) sorted by index; the rest are
    cancelled. A failure before that point cancels everything and is raised."""
    key, tasks = start_tasks(coroutines)
    try:
        outcome = await recorded_outcome(port, key)
        if outcome is None:
            outcome = await _first_finished(tasks, needed)
        await record_outcome(port, key, outcome)
        kind, _, indexes = outcome.partition(":")
        chosen = [tasks[int(i)] for i in indexes.split(",") if i]
        await asyncio.wait(chosen)
    except asyncio.CancelledError:
        await _stop(tasks)
        raise
    await cancel_decided(tasks)
    if kind == "failed" and _failed(chosen[0]):
        raise chosen[0].exception()  # type: ignore[misc]
    return [(tasks.index(task), task.result()) for task in chosen]


async def _first_finished(tasks: list["asyncio.Task[Any]"], needed: int) -> str:
    """``won:<indexes>`` of the first ``needed`` tasks to succeed, or ``failed:<index>``."""
    finished: list[int] = []
    pending = set(tasks)
    while len(finished) < needed and pending:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        for task in sorted(done, key=tasks.index):
            if _failed(task):
                return f"failed:{tasks.index(task)}"
            finished.append(tasks.index(task))
    return "won:" + ",".join(str(i) for i in sorted(finished[:needed]))


def _failed(task: "asyncio.Future[Any]") -> bool:
    return task.done() and not task.cancelled() and task.exception() is not None


async def recorded_outcome(port: EnginePort, key: str) -> str | None:
    """The outcome an earlier run recorded for the group ``key``, if the port keeps a journal."""
    return await port.recorded_outcome(key) if _keeps_journal(type(port)) else None  # type: ignore[attr-defined]


async def record_outcome(port: EnginePort, key: str, outcome: str) -> None:
    if _keeps_journal(type(port)):
        await port.record_outcome(key, outcome)  # type: ignore[attr-defined]


@functools.cache
def _keeps_journal(port_type: type) -> bool:
    # A protocol isinstance check costs ~8 µs, more than a whole state of the in-process engine.
    return issubclass(port_type, OutcomeJournal)


async def _stop(tasks: Sequence["asyncio.Future[Any]"]) -> None:
    """Cancel ``tasks`` because the caller itself is being cancelled (its cancellation, decided
    or not, passes down to them through their scopes)."""
    pending = [task for task in tasks if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
