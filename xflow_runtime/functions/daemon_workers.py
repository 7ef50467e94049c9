"""Daemon threads for sync custom functions, reused between calls.

A sync function runs off the event loop. asyncio's default executor would do, but its threads
are joined at exit, so a call abandoned by a timeout would hold the process until it returns
(specs/limits.md §4). A daemon thread never delays exit; starting one per call costs ~75 µs more
than the executor (measured), so finished threads wait for the next call instead (up to
``MAX_IDLE`` of them). An abandoned call keeps its thread until the function returns; its
outcome is dropped and the thread is then reused. Functions are never interrupted, so a reused
thread never receives an exception meant for an earlier call.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from typing import Any, Callable

#: Finished threads kept for later calls; more are started when more calls run at once.
MAX_IDLE = 8


class Call:
    """One submitted call: ``outcome`` is awaited; ``running`` says whether the function has not
    returned yet (for the abandoned-call warning)."""

    def __init__(self, work: Callable[[], Any], loop: asyncio.AbstractEventLoop, name: str) -> None:
        # Run in a copy of the caller's context, as asyncio.to_thread does: the function sees the
        # current span (its own spans nest under ours; protocol clients propagate it).
        context = contextvars.copy_context()
        self.work, self.loop, self.name = (lambda: context.run(work)), loop, name
        self.outcome: asyncio.Future[Any] = loop.create_future()
        self.running = True

    def run(self) -> None:
        try:
            result, error = self.work(), None
        except Exception as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            result, error = None, exc
        self.running = False
        try:
            self.loop.call_soon_threadsafe(self._settle, result, error)
        except RuntimeError:  # the loop closed meanwhile: nobody is waiting
            pass

    def _settle(self, result: Any, error: BaseException | None) -> None:
        if self.outcome.done():  # abandoned: the late outcome is dropped
            return
        if error is None:
            self.outcome.set_result(result)
        else:
            self.outcome.set_exception(error)


class DaemonWorkers:
    def __init__(self, max_idle: int = MAX_IDLE) -> None:
        self._max_idle = max_idle
        self._idle: list["queue.SimpleQueue[Call]"] = []
        self._lock = threading.Lock()

    def submit(self, work: Callable[[], Any], name: str) -> Call:
        """Run ``work`` on a daemon thread; await ``call.outcome`` on the running loop."""
        call = Call(work, asyncio.get_running_loop(), name)
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(inbox,), name="xflow-function", daemon=True).start()
        inbox.put(call)
        return call

    def _serve(self, inbox: "queue.SimpleQueue[Call]") -> None:
        thread = threading.current_thread()
        while True:
            call = inbox.get()
            thread.name = f"xflow-function: {call.name}"
            call.run()
            with self._lock:
                if len(self._idle) >= self._max_idle:
                    return
                self._idle.append(inbox)


#: The process's workers (threads are process-wide; calls carry their own event loop).
WORKERS = DaemonWorkers()
