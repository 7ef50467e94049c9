"""Custom functions for the crash test: each call appends to a log so the test can count how many
times every function really ran. The log path arrives in the arguments (state data), so the
functions hold no state of their own."""

from __future__ import annotations

import os
import time


def record(log: str, n: int, pause: float = 0.03) -> int:
    """Append ``start n``, work a little, append ``done n``; return ``n * n``."""
    _append(log, f"start {n}")
    time.sleep(pause)
    _append(log, f"done {n}")
    return n * n


def _append(log: str, line: str) -> None:
    with open(log, "a", encoding="utf-8") as sink:
        sink.write(line + "\n")
        sink.flush()
        os.fsync(sink.fileno())
