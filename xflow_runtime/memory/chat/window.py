"""Window policies and the pure selection algorithm (no I/O, property-tested).

A window is the longest suffix of a chat history that

* starts with a ``user`` message (never with an assistant message or a tool result), and
* keeps every assistant tool call together with its tool results (parallel calls too), and
* fits both limits: at most ``max_messages`` messages and at most ``max_tokens`` tokens.

Stored histories are validated turn by turn (``messages.validate_turn``): tool results directly
follow the assistant message that called them and no user message sits inside such a group. In
such a history every suffix that starts at a user message keeps tool groups whole, so the window
is "the suffix that starts at the oldest user message still inside both budgets". The algorithm
reads newest-first and stops at the first message past a budget: cost O(messages kept).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Iterable

from xflow_runtime.memory.chat.errors import ChatMemoryError

#: Defaults when a limit is not given (DYPAI's ``memory_window`` / ``memory_max_tokens``).
DEFAULT_MAX_MESSAGES = 20
DEFAULT_MAX_TOKENS = 4000


class WindowKind(str, Enum):
    MESSAGE = "message_window"
    TOKEN = "token_window"


@dataclass(frozen=True)
class WindowPolicy:
    """How much history an LLM call sees.

    ``message_window`` limits the count (default 20) and ``token_window`` the tokens (default
    4000). A limit given explicitly applies whatever the kind, so both together mean "whichever
    triggers first".
    """

    kind: WindowKind = WindowKind.MESSAGE
    max_messages: int | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "kind", WindowKind(self.kind))
        except ValueError:
            raise ChatMemoryError(f"unknown memoryType {self.kind!r}: expected message_window or "
                                  "token_window") from None
        for name in ("max_messages", "max_tokens"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ChatMemoryError(f"{name} must be a non-negative integer, got {value!r}")

    @property
    def message_limit(self) -> int | None:
        if self.max_messages is None and self.kind is WindowKind.MESSAGE:
            return DEFAULT_MAX_MESSAGES
        return self.max_messages

    @property
    def token_limit(self) -> int | None:
        if self.max_tokens is None and self.kind is WindowKind.TOKEN:
            return DEFAULT_MAX_TOKENS
        return self.max_tokens


@dataclass(frozen=True)
class Selection:
    """The outcome of a selection over a newest-first stream.

    ``kept``: how many of the newest messages form the window. ``tokens``: their token total.
    ``dropped_older``: older messages exist outside the window. ``overflow``: history exists but
    even the newest complete turn does not fit, so the window is empty (logged by the caller).
    """

    kept: int
    tokens: int
    dropped_older: bool
    overflow: bool


def select_window(newest_first: Iterable[tuple[str, int]], *, max_messages: int | None,
                  max_tokens: int | None) -> Selection:
    """Choose the window from ``(role, tokens)`` pairs given newest first.

    Consumes the iterable only up to the first message past a budget, so a lazy database cursor
    is read no further than needed.
    """
    kept = kept_tokens = 0
    seen = total = 0
    if max_messages == 0 or max_tokens == 0:  # "no history" is a choice, not an overflow
        has_any = next(iter(newest_first), None) is not None
        return Selection(0, 0, dropped_older=has_any, overflow=False)
    for role, tokens in newest_first:
        seen += 1
        total += tokens
        if (max_messages is not None and seen > max_messages) or (
                max_tokens is not None and total > max_tokens):
            return Selection(kept, kept_tokens, dropped_older=True, overflow=kept == 0)
        if role == "user":
            kept, kept_tokens = seen, total
    return Selection(kept, kept_tokens, dropped_older=kept < seen, overflow=False)


def window_of(history: list[tuple[str, int]], policy: WindowPolicy) -> Selection:
    """Convenience over a whole in-memory history given oldest first."""
    return select_window(reversed(history), max_messages=policy.message_limit,
                         max_tokens=policy.token_limit)
