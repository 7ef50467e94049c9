"""Waiting, boundedly, for an instance to reach a point a caller cares about: it ended, or an
agent answered and waits for the next message. Reads the hub; never runs the instance."""

from __future__ import annotations

import re
import time

from xflow_runtime.service.live import TERMINAL_RECORDS, Subscription
from xflow_runtime.service.problems import Problem

_PREFER_WAIT = re.compile(r"(?:^|[,;\s])wait=(\d{1,6})(?:$|[,;\s])")


def prefer_wait(header: str | None, cap: float) -> float | None:
    """Seconds asked for by ``Prefer: wait=N`` (RFC 7240 §4.3), capped; ``None`` if absent."""
    if not header:
        return None
    match = _PREFER_WAIT.search(header)
    return None if match is None else min(float(match.group(1)), cap)


async def settled(subscription: Subscription, seconds: float, *, after_seq: int = -1,
                  until: tuple[str, ...] = ("agent_reply", *TERMINAL_RECORDS)) -> dict | None:
    """The first record (seq > ``after_seq``) whose event is in ``until``, or ``None`` when the
    time runs out or the instance's status changes without a record (cancelled)."""
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        item = await subscription.get(left)
        if item is None:
            return None
        if item.kind == "status":
            return None
        if item.kind == "overflow":
            raise Problem("reply-timeout", "the instance produced more than this request could follow")
        if item.kind == "record" and item.data.get("seq", -1) > after_seq and item.data.get("event") in until:
            return item.data


def idempotency_key(header: str | None) -> str | None:
    """The key of an ``Idempotency-Key`` header: an RFC 8941 string (``"…"``) or a bare token."""
    if header is None:
        return None
    value = header.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    if not 1 <= len(value) <= 255 or not all(33 <= ord(c) < 127 for c in value):
        raise Problem("idempotency-key-invalid", "the key must be 1-255 visible ASCII characters")
    return value
