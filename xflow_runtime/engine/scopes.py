"""Scopes: a deterministic name for every engine call, even when work runs concurrently.

An instance runs its concurrent work (parallel branches, foreach iterations, a timer raced against
an action, the tool calls of one model reply) as asyncio tasks. Each such task runs in its own
:class:`Scope`, whose path is fixed when the task is *started* — ``<parent path>/<n>.<label>``
where ``n`` is a number drawn from the parent — so it names the same work in every run, however
the tasks interleave. Within a scope calls are sequential, so ``(scope path, sequence number)``
identifies an engine call exactly. The durable engine records that pair with every operation and
replays a recovered instance by it (:mod:`.replay`); the in-process engine ignores it.

Tasks started here are the only tasks whose cancellation the durable engine records: a task
cancelled because a race was decided (a timer won, enough branches finished, a branch failed) is
marked ``decided`` first, so the engine can tell that from a shutdown.
"""

from __future__ import annotations

import asyncio
import inspect
import weakref
from contextvars import ContextVar
from typing import Any, Awaitable, Callable, Iterable, Sequence


class Scope:
    """One sequential thread of an instance's work."""

    __slots__ = ("path", "parent", "root", "decided", "_next", "_ended", "_listeners")

    def __init__(self, path: str = "", parent: "Scope | None" = None) -> None:
        self.path = path
        self.parent = parent
        self.root: Scope = self if parent is None else parent.root
        #: Set when this scope's task was cancelled because a race was decided.
        self.decided = False
        self._next = 0
        # Only the root keeps these: which scopes ended, and who waits to hear about it.
        self._ended: set[str] = set()
        self._listeners: list[Callable[[], None]] = []

    def take(self) -> int:
        """The next sequence number in this scope."""
        number = self._next
        self._next += 1
        return number

    def child(self, spawn: int, label: str) -> "Scope":
        return Scope(f"{self.path}/{spawn}.{label}", self)

    @property
    def cancelled_by_decision(self) -> bool:
        """Whether this scope, or one it runs inside, was cancelled by a decided race."""
        scope: Scope | None = self
        while scope is not None:
            if scope.decided:
                return True
            scope = scope.parent
        return False

    # --- the root's registry of ended scopes ------------------------------------------------------
    def has_ended(self, path: str) -> bool:
        return path in self.root._ended

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` whenever a scope of this tree ends."""
        self.root._listeners.append(listener)

    def _end(self) -> None:
        root = self.root
        if root._listeners:  # only a replay asks which scopes ended (an in-process root keeps nothing)
            root._ended.add(self.path)
            for listener in list(root._listeners):
                listener()


_current: ContextVar[Scope | None] = ContextVar("xflow_scope", default=None)
_scopes: "weakref.WeakKeyDictionary[asyncio.Future[Any], Scope]" = weakref.WeakKeyDictionary()


def current_scope() -> Scope:
    """The scope of the running task (a fresh root when none is set)."""
    scope = _current.get()
    if scope is None:
        scope = Scope()
        _current.set(scope)
    return scope


def enter_root() -> Scope:
    """Start a new scope tree in the current context (one per instance run)."""
    scope = Scope()
    _current.set(scope)
    return scope


def start_tasks(coroutines: Sequence[Awaitable[Any]], labels: Iterable[str] | None = None
                ) -> tuple[str, list["asyncio.Task[Any]"]]:
    """Start one task per awaitable, each in its own child scope of the current one.

    Returns the *decision key* of this group (``<path>#<n>``, where the group's outcome, if any,
    is recorded) and the tasks, in input order. Tasks are created in order before any of them
    runs, so their scopes are the same in every run.
    """
    parent = current_scope()
    spawn = parent.take()
    names = list(labels) if labels is not None else [str(i) for i in range(len(coroutines))]
    tasks = []
    for label, awaitable in zip(names, coroutines):
        scope = parent.child(spawn, label)
        tasks.append(_start(scope, awaitable))
    return f"{parent.path}#{spawn}", tasks


def start_named_task(awaitable: Awaitable[Any], name: str) -> "asyncio.Task[Any]":
    """Start a task in the scope ``/<name>`` of the instance, whoever starts it (for work the
    instance runs once, such as its event reader)."""
    return _start(Scope(f"/{name}", current_scope().root), awaitable)


def _start(scope: Scope, awaitable: Awaitable[Any]) -> "asyncio.Task[Any]":
    task = asyncio.ensure_future(_run_in(scope, awaitable))
    _scopes[task] = scope
    if inspect.iscoroutine(awaitable):
        task.add_done_callback(lambda _: _close_unstarted(awaitable))
    return task


def _close_unstarted(coroutine: Any) -> None:
    # A task cancelled before its first step never awaits the coroutine it wraps: close it, as
    # asyncio does for a coroutine it was given directly (no "never awaited" warning).
    if inspect.getcoroutinestate(coroutine) == inspect.CORO_CREATED:
        coroutine.close()


async def _run_in(scope: Scope, awaitable: Awaitable[Any]) -> Any:
    _current.set(scope)  # the task runs in a copy of its creator's context: this stays local
    try:
        return await awaitable
    finally:
        scope._end()


async def cancel_decided(tasks: Iterable["asyncio.Future[Any]"]) -> None:
    """Cancel ``tasks`` because a race was decided, and wait until they have stopped."""
    pending = [task for task in tasks if not task.done()]
    for task in pending:
        scope = scope_of(task)
        if scope is not None:
            scope.decided = True
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)


def scope_of(task: "asyncio.Future[Any]") -> Scope | None:
    """The scope a task from :func:`start_tasks` runs in."""
    return _scopes.get(task)
