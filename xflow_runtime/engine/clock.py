"""A virtual clock for tests: an asyncio event loop whose time jumps over idle waits.

:class:`VirtualClockLoop` is a normal selector event loop except for :meth:`time`: when no callback
is ready and no effect is in flight, it moves its clock straight to the next timer instead of
blocking. Sleep states, retry back-off, event and state timeouts therefore take no real time and
fire in a deterministic order. While an effect is in flight (the in-process engine marks every
``run_step`` with :meth:`busy`), time flows at the real rate, so real I/O (a local HTTP server, the
scripted model server) is never overtaken by a virtual timeout.

When nothing is ready, nothing is in flight and no timer is pending, the program can never make
progress (for example a state waits for an event nobody sends): the loop calls ``on_stall``, which
the in-process engine uses to end the run with a clear ``stalled`` error instead of hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Callable, Iterator


class VirtualClockLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        super().__init__()
        self._offset = 0.0
        self._in_flight = 0
        self.on_stall: Callable[[], None] | None = None

    def time(self) -> float:
        return time.monotonic() + self._offset

    @property
    def skipped(self) -> float:
        """Seconds of virtual time jumped over so far."""
        return self._offset

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """Mark real work in flight: time is not advanced artificially until it finishes."""
        self._in_flight += 1
        try:
            yield
        finally:
            self._in_flight -= 1

    def _run_once(self) -> None:
        if not self._ready and not self._stopping and self._in_flight == 0:  # type: ignore[attr-defined]
            scheduled = self._scheduled  # type: ignore[attr-defined]
            live = [handle._when for handle in scheduled if not handle._cancelled]
            if live:
                gap = min(live) - self.time()
                if gap > 0 and not self._io_ready():
                    self._offset += gap
            elif self.on_stall is not None and not self._io_ready():
                self.on_stall()
        super()._run_once()  # type: ignore[misc]

    def _io_ready(self) -> bool:
        """Whether some file descriptor (a thread waking the loop, a socket) has data right now."""
        return bool(self._selector.select(0))  # type: ignore[attr-defined]


def new_virtual_loop() -> VirtualClockLoop:
    return VirtualClockLoop()
