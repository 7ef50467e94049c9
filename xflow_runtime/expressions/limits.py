"""The budget of one evaluation (jq expression or prompt template), and where it comes from.

Defaults are in specs/limits.md. A runtime sets its own (``Runtime(evaluation_limits=…)``); a
workflow may lower or raise the time with ``timeouts.evaluationTimeout``. The budget in force is a
context variable: ``run_instance`` sets it for the instance's task, and every task the instance
starts inherits it, so code deep in a template render needs no extra argument.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from dataclasses import dataclass, replace
from typing import Any, ContextManager


@dataclass(frozen=True)
class EvaluationLimits:
    #: Wall-clock seconds one evaluation may take (the evaluator process is busy only with it).
    timeout: float = 1.0
    #: Bytes of the result, as compact JSON (all outputs together).
    max_result_bytes: int = 16 * 1024 * 1024
    #: Address space of an evaluator process (``RLIMIT_AS``): what libjq may allocate while working.
    max_memory_bytes: int = 1024 * 1024 * 1024

    def with_timeout(self, seconds: float | None) -> "EvaluationLimits":
        return self if seconds is None or seconds == self.timeout else replace(self, timeout=seconds)


DEFAULT_LIMITS = EvaluationLimits()

_current: contextvars.ContextVar[EvaluationLimits] = contextvars.ContextVar("xflow_evaluation_limits",
                                                                            default=DEFAULT_LIMITS)


def current_limits() -> EvaluationLimits:
    return _current.get()


def use_limits(limits: EvaluationLimits) -> contextvars.Token[EvaluationLimits]:
    """Make ``limits`` the budget of this task (and of the tasks it starts from now on)."""
    return _current.set(limits)


def reset_limits(token: contextvars.Token[EvaluationLimits]) -> None:
    _current.reset(token)


def real_time(loop: asyncio.AbstractEventLoop) -> ContextManager[None]:
    """Mark a wait on an evaluation as real work: a loop that jumps over idle time (the virtual
    clock of engine/clock.py, used in tests) must not fire the budget's timer early."""
    busy = getattr(loop, "busy", None)
    return busy() if busy is not None else contextlib.nullcontext()


def resolve_once(future: "asyncio.Future[Any]", value: Any) -> None:
    """Set ``future``'s result unless something already did (a budget's timer racing the work)."""
    if not future.done():
        future.set_result(value)
