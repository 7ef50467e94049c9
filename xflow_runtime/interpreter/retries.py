"""Whether a failed action is tried again, and how long to wait first (pure functions).

- ``maxAttempts`` counts every attempt, the first one included (``1`` = no retries).
- Delay series: the first retry waits ``delay``; each later wait is the previous *actual* wait times
  ``multiplier`` (when set) plus ``increment``; then jitter is added; then ``maxDelay`` caps it.
- Jitter is deterministic: its random part is derived from the instance id, the step and the
  attempt, so a durable replay decides the same wait.
"""

from __future__ import annotations

import hashlib

from xflow_runtime.interpreter.failures import Failure
from xflow_runtime.plan.definitions import DEFAULT_AUTO_RETRY
from xflow_runtime.plan.model import Action, ErrorDef, RetryDef


def retry_strategy(action: Action, failure: Failure, *, auto_retries: bool,
                   known_errors: dict[str, ErrorDef]) -> RetryDef | None:
    """The strategy under which ``failure`` may be retried, or ``None`` when it may not be at all."""
    if action.invoke == "async":
        return None
    if auto_retries:
        if failure.matches_any(action.non_retryable_errors):
            return None
        return action.retry or DEFAULT_AUTO_RETRY
    if action.retry is None or not failure.matches_any(known_errors.values()):
        return None
    if action.retryable_errors is not None and not failure.matches_any(action.retryable_errors):
        return None
    return action.retry


def next_delay(strategy: RetryDef, retry_number: int, previous: float | None, seed: str) -> float:
    """Seconds to wait before retry ``retry_number`` (1 = the first retry)."""
    if retry_number == 1 or previous is None:
        delay = strategy.delay
    else:
        delay = previous * (strategy.multiplier if strategy.multiplier is not None else 1.0) + strategy.increment
    if strategy.jitter_fraction or strategy.jitter_seconds:
        spread = strategy.jitter_fraction * delay if strategy.jitter_fraction else strategy.jitter_seconds
        delay += spread * _unit_noise(f"{seed}#{retry_number}")
    if strategy.max_delay is not None:
        delay = min(delay, strategy.max_delay)
    return max(0.0, delay)


def _unit_noise(seed: str) -> float:
    """A value in [-1, 1) that depends only on ``seed``."""
    digest = hashlib.blake2b(seed.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**63 - 1.0
