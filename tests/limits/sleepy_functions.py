"""A custom function that outlives its timeout (tests/limits/test_function_timeouts.py)."""

from __future__ import annotations

import time


def sleep_long(*, seconds: float) -> float:
    time.sleep(seconds)
    return seconds
