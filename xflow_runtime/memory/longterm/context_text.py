"""What is embedded for a chat message or a memory: its text with its context (pure).

The stored content never changes; only the text handed to the embedding model carries the
context a reader would need to place it. Format (``specs/memory-longterm.md``, "Contextual
indexing"), for a chat message::

    [Monday 8 May 2023] Melanie: How was your weekend?
    Caroline: I went to a support group yesterday.

— the date of the message's session (the day it was said, UTC), the turn it answers (the
previous user/assistant message of the same chat, shortened to ``ANSWERED_CHARS``) and who said
it (the message's ``name``, else ``User`` / ``Assistant``). A chat's first message has no
second line: ``[Monday 8 May 2023] Caroline: Hi!``.

Agent memories are embedded as ``title`` + newline + ``content`` (the title is their context)
and facts as their content alone: extraction already writes dates into a fact ("visited Porto
in May 2026"), and the near-duplicate check compares facts written on different days.
"""

from __future__ import annotations

from datetime import date, datetime

ANSWERED_CHARS = 300
#: ``LongTermOptions.message_contexts``: what a message's embedded texts carry (one vector each)
MESSAGE_CONTEXTS = ("full", "date-speaker", "none")
MESSAGE_CHARS = 4000  # the embedding model reads a few hundred tokens at most


def day_label(day: date) -> str:
    """``Monday 8 May 2023``: the form time-aware queries are normalised to as well."""
    return f"{day:%A} {day.day} {day:%B %Y}"


def speaker(role: str, name: str | None) -> str:
    return name.strip() if name and name.strip() else ("User" if role == "user" else "Assistant")


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1].rstrip() + "…"


def message_text(text: str, *, said_on: date | datetime, who: str,
                 answers: tuple[str, str] | None = None) -> str:
    """The embedded text of one chat message; ``answers`` = (speaker, text) of the turn before."""
    day = said_on.date() if isinstance(said_on, datetime) else said_on
    body = f"{who}: {_one_line(text, MESSAGE_CHARS)}"
    if answers is None:
        return f"[{day_label(day)}] {body}"
    return f"[{day_label(day)}] {answers[0]}: {_one_line(answers[1], ANSWERED_CHARS)}\n{body}"


def message_in_context(text: str, context: str, *, said_on: date | datetime, who: str,
                       answers: tuple[str, str] | None) -> str:
    """:func:`message_text` as ``context`` asks: ``full``, ``date-speaker`` (no answered turn)
    or ``none`` (the text alone, whitespace collapsed)."""
    if context == "none":
        return _one_line(text, MESSAGE_CHARS)
    return message_text(text, said_on=said_on, who=who, answers=answers if context == "full" else None)


def memory_text(title: str | None, content: str) -> str:
    """The embedded text of an agent memory (title) or a fact (no title)."""
    return content if title is None else f"{title}\n{content}"
