"""ISO 8601 durations (``PT1M30S``, ``P2DT4H``, ``P1W``) parsed to seconds, once, at compile time.

Years count 365 days and months 30 days (a duration has no calendar anchor here). Date units after
``T`` (``PT30D``, ``PT2W``, which appear in the 0.8 examples) are rejected with a clear message.
"""

from __future__ import annotations

import re

from xflow_runtime.errors import DefinitionError

_NUMBER = r"(\d+(?:[.,]\d+)?)"
_DURATION = re.compile(
    rf"^(?P<sign>-)?P(?:{_NUMBER}Y)?(?:{_NUMBER}M)?(?:{_NUMBER}W)?(?:{_NUMBER}D)?"
    rf"(?:T(?:{_NUMBER}H)?(?:{_NUMBER}M)?(?:{_NUMBER}S)?)?$"
)
_UNIT_SECONDS = (365 * 86400, 30 * 86400, 7 * 86400, 86400, 3600, 60, 1)


def parse_duration(text: object, *, where: str = "duration") -> float:
    """Seconds in the ISO 8601 duration ``text``; a clear :class:`DefinitionError` otherwise."""
    if isinstance(text, (int, float)) and not isinstance(text, bool) and text >= 0:
        return float(text)  # lenient: a bare number of seconds
    if not isinstance(text, str):
        raise DefinitionError([f"{where}: expected an ISO 8601 duration such as 'PT30S', found {text!r}"])
    value = text.strip().upper()
    match = _DURATION.match(value)
    if not match or value in ("P", "PT") or value.endswith("T"):
        hint = ""
        if re.match(r"^PT\d+[DW]$", value):
            hint = f" (days and weeks go before 'T': write 'P{value[2:]}')"
        raise DefinitionError([f"{where}: {text!r} is not an ISO 8601 duration{hint}"])
    if match.group("sign"):
        raise DefinitionError([f"{where}: {text!r} is negative; durations must be zero or more"])
    total = 0.0
    for amount, unit in zip(match.groups()[1:], _UNIT_SECONDS):
        if amount is not None:
            total += float(amount.replace(",", ".")) * unit
    return total


def optional_duration(text: object, *, where: str) -> float | None:
    return None if text is None else parse_duration(text, where=where)
