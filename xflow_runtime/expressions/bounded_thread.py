"""Pure-Python evaluation (a Jinja2 template) under the evaluation budget.

Python code can be interrupted between bytecodes, so a template render does not need a process of
its own: it runs in a daemon thread while the event loop keeps serving other instances (the GIL
is handed over every few milliseconds), and past the budget the thread gets an asynchronous
exception (``PyThreadState_SetAsyncExc``) that ends the render at its next bytecode. Single C calls
that could run long on their own (``"x" * n``, ``10 ** n``) are refused by the sandbox before they
start (agent/prompts.py), so the interruption is always delivered promptly.
"""

from __future__ import annotations

import asyncio
import ctypes
import threading
from typing import Any, Callable

from xflow_runtime.errors import ExpressionTimeout
from xflow_runtime.expressions.limits import current_limits, real_time, resolve_once


class _Interrupted(BaseException):
    """Raised inside a render thread whose evaluation ran out of time (BaseException: user code
    catching ``Exception`` cannot swallow it)."""


def start_daemon_thread(work: Callable[[], Any], name: str) -> tuple["asyncio.Future[Any]", threading.Thread]:
    """Run ``work`` in a new daemon thread; the future (of the running loop) gets its outcome.

    A daemon thread never delays the process's exit (the default executor's threads are joined
    at exit), so abandoned work (a timed-out call) cannot hold the process."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if done.done():
            return
        if error is None:
            done.set_result(result)
        else:
            done.set_exception(error)

    def target() -> None:
        try:
            result, error = work(), None
        except _Interrupted:
            return
        except Exception as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop closed meanwhile: nobody is waiting
            pass

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return done, thread


async def run_bounded(work: Callable[[], Any], what: str) -> Any:
    """``work()``'s result, or :class:`ExpressionTimeout` once the budget is spent."""
    limits = current_limits()
    loop = asyncio.get_running_loop()
    done, thread = start_daemon_thread(work, f"xflow-evaluation: {what[:40]}")
    timer = loop.call_later(limits.timeout, resolve_once, done, _EXPIRED)
    try:
        with real_time(loop):
            result = await done
    except asyncio.CancelledError:
        _interrupt(thread)
        raise
    finally:
        timer.cancel()
    if result is _EXPIRED:
        _interrupt(thread)
        raise ExpressionTimeout(f"template did not finish within its budget of {limits.timeout:g} s",
                                expression=what)
    return result


_EXPIRED = object()


def _interrupt(thread: threading.Thread) -> None:
    if thread.ident is not None and thread.is_alive():
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(_Interrupted))
