"""Custom functions for the race crash tests (``test_crash_races.py``).

Each call appends timestamped lines to a log so the test can tell what really ran and when:
``start n T``, then ``done n T`` or — when a race cancels it (a timer won, an ``atLeast`` quorum was
reached) — ``cancelled n T``. The functions are async so a cancelled call really stops and never
writes ``done``. The log path arrives in the arguments (state data): no state of their own.
"""

from __future__ import annotations

import asyncio
import os
import time


async def record(log: str, n: int, pause: float = 0.0) -> int:
    """Append ``start n``, wait ``pause`` seconds, append ``done n``; return ``n * n``."""
    append(log, "start", n)
    try:
        await asyncio.sleep(pause)
    except asyncio.CancelledError:
        append(log, "cancelled", n)
        raise
    append(log, "done", n)
    return n * n


def append(log: str, event: str, n: int) -> None:
    with open(log, "a", encoding="utf-8") as sink:
        sink.write(f"{event} {n} {time.time():.6f}\n")
        sink.flush()
        os.fsync(sink.fileno())
