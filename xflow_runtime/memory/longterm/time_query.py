"""Time-aware queries: relative dates in a question written out against the conversation's
time (pure; the clock is a parameter, so tests fix it).

"What did I buy two weeks ago?" asked on Friday 6 March 2026 becomes "What did I buy two weeks
ago (Friday 20 February 2026)?": the absolute form is the one contextual indexing writes before
every message (``context_text.day_label``, months as ``February 2026``), so the semantic list can
match the dated messages. The keyword list keeps the question as asked (dates are not in the
full-text index, and extra OR-words would only add noise).

Understood (case-insensitive): today, yesterday, N days/weeks/months/years ago (N in digits or
words up to twelve, "a"/"an"), last/this week, last/this month, last/this year, last
<weekday>, last <month>, in <month> (the latest one not in the future).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, timedelta

from xflow_runtime.memory.longterm.context_text import day_label

_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_WEEKDAYS = {name.lower(): number for number, name in enumerate(calendar.day_name)}
_N = r"(\d{1,3}|" + "|".join(_NUMBERS) + r")"
_PATTERN = re.compile(
    r"\b(?:(?P<day>today|yesterday)"
    rf"|(?P<n>{_N})\s+(?P<unit>day|week|month|year)s?\s+ago"
    r"|(?P<which>last|this)\s+(?P<period>week|month|year)"
    rf"|last\s+(?P<weekday>{'|'.join(_WEEKDAYS)})"
    rf"|(?P<prep>last|in)\s+(?P<month>{'|'.join(_MONTHS)})(?!\s+\d{{4}})"
    r")\b", re.IGNORECASE)


@dataclass(frozen=True)
class TimeResolution:
    text: str  # the query with each expression followed by its absolute form in parentheses
    mentions: tuple[tuple[str, str], ...]  # (expression as written, absolute form)


def _month_label(year: int, month: int) -> str:
    return f"{calendar.month_name[month]} {year}"


def _months_back(day: date, months: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 - months
    return index // 12, index % 12 + 1


def _absolute(match: re.Match[str], now: date) -> str:
    groups = {name: (value.lower() if value else None) for name, value in match.groupdict().items()}
    if groups["day"]:
        return day_label(now if groups["day"] == "today" else now - timedelta(days=1))
    if groups["unit"]:
        count = _NUMBERS.get(groups["n"] or "", None) or int(groups["n"] or 0)
        unit = groups["unit"]
        if unit in ("day", "week"):
            return day_label(now - timedelta(days=count * (7 if unit == "week" else 1)))
        if unit == "month":
            return _month_label(*_months_back(now, count))
        return str(now.year - count)
    if groups["period"]:
        back = 1 if groups["which"] == "last" else 0
        if groups["period"] == "week":
            monday = now - timedelta(days=now.weekday() + 7 * back)
            return f"the week of {day_label(monday)}"
        if groups["period"] == "month":
            return _month_label(*_months_back(now, back))
        return str(now.year - back)
    if groups["weekday"]:
        days = (now.weekday() - _WEEKDAYS[groups["weekday"]]) % 7 or 7
        return day_label(now - timedelta(days=days))
    month = _MONTHS[groups["month"] or ""]
    # "last May" in May means a year ago; "in May" in May means this May
    year = now.year if month < now.month or (month == now.month and groups["prep"] == "in") else now.year - 1
    return _month_label(year, month)


def resolve_time(query: str, now: date) -> TimeResolution:
    """``query`` with its relative time expressions resolved against ``now``."""
    mentions: list[tuple[str, str]] = []

    def annotate(match: re.Match[str]) -> str:
        absolute = _absolute(match, now)
        mentions.append((match.group(0), absolute))
        return f"{match.group(0)} ({absolute})"

    return TimeResolution(_PATTERN.sub(annotate, query), tuple(mentions))
