"""The engine port: the only way the interpreter touches time, ids, events and side effects.

The interpreter is deterministic code over this port. An engine decides how each call is
carried out: the in-process engine runs effects directly (optionally on a virtual clock), the
durable engine runs each effect as a DBOS step, sleeps durably and receives events durably, so
that an instance killed at any point resumes from its last completed step.

Rules for code written against the port (they are what make durable replay correct):
- every side effect (function call, LLM call, database write) goes through :meth:`run_step`;
- never read the wall clock or generate random ids directly: use :meth:`now` and :meth:`new_id`;
- effects must be idempotent, because the step in flight at a crash runs again.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Protocol, TypeVar, runtime_checkable

T = TypeVar("T")


@runtime_checkable
class EnginePort(Protocol):
    async def run_step(self, name: str, effect: Callable[[], Awaitable[T]]) -> T:
        """Run ``effect`` once for this position in the instance; a durable engine records its
        result (or its exception) and returns the recording on replay instead of running it again."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (durably, on the engine's clock)."""
        ...

    async def wait_event(self, topic: str, timeout: float | None) -> Any | None:
        """The next message sent to this instance on ``topic``, or ``None`` when ``timeout``
        seconds pass first (``None`` timeout waits for ever)."""
        ...

    async def now(self) -> float:
        """Seconds since the epoch, on the engine's clock (recorded, so replays see the same value)."""
        ...

    async def new_id(self) -> str:
        """A fresh unique id (recorded, so replays see the same value)."""
        ...


@runtime_checkable
class OutcomeJournal(Protocol):
    """Optional for a port: remembers how races were decided, so a replay decides them alike.

    ``key`` names a group of concurrently started tasks (:func:`~xflow_runtime.engine.scopes.start_tasks`);
    an outcome is a short string (``"work"``, ``"timer"``, ``"won:0,2"``, ``"failed:1"``). A port
    without a journal (the in-process engine) races again on every run, which is all it needs.
    """

    async def recorded_outcome(self, key: str) -> str | None:
        """The outcome recorded for ``key`` by an earlier run of this instance, if any."""
        ...

    async def record_outcome(self, key: str, outcome: str) -> None:
        """Record ``outcome`` for ``key`` (a replay passes the outcome it found recorded)."""
        ...
