"""What every ``xflow`` command shares when it prints: JSON, timestamps, colour, exit codes.

Conventions (specs/cli.md): data goes to stdout, messages to stderr; ``--json`` makes a command
print JSON (one document, or JSON lines for listings); a timestamp is ISO 8601 in UTC with its
zone (``2026-11-24T17:22:55.123+00:00``), in text and in JSON alike; colour only on a terminal,
never when ``NO_COLOR`` is set (https://no-color.org) or ``TERM=dumb``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any, Iterable, TextIO

if TYPE_CHECKING:  # datetime is imported when a time is written, not at start-up
    from datetime import datetime

# --- exit codes (the one table: specs/cli.md §exit codes) ------------------------------------------
OK = 0
#: the command failed: a failed instance, an invalid document (validate), a store or lookup error
FAILED = 1
#: a usage error: bad options or values, an invalid definition given to run/chat
USAGE = 2
#: ``--wait-timeout`` passed while the instance still waits (it keeps waiting durably)
STILL_WAITING = 3
#: interrupted (Ctrl-C); a durable instance continues with ``xflow resume``
INTERRUPTED = 130

#: keys holding epoch seconds in the dicts the runtime describes instances with
TIME_KEYS = frozenset({"created_at", "updated_at", "completed_at", "entered_at", "at", "due"})


def add_json_flag(parser: argparse.ArgumentParser, help_text: str = "print JSON") -> None:
    parser.add_argument("--json", action="store_true", help=help_text)


def timestamp(value: "float | datetime | None") -> str | None:
    """ISO 8601 with the zone, in UTC, millisecond precision; ``None`` stays ``None``."""
    if value is None:
        return None
    from datetime import datetime, timezone

    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    else:
        moment = datetime.fromtimestamp(value, tz=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds")


def with_timestamps(value: Any) -> Any:
    """``value`` with every epoch-seconds field of :data:`TIME_KEYS` written as ISO 8601."""
    if isinstance(value, dict):
        return {key: (timestamp(item) if key in TIME_KEYS and _is_time(item) else with_timestamps(item))
                for key, item in value.items()}
    if isinstance(value, list):
        return [with_timestamps(item) for item in value]
    return value


def _is_time(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or hasattr(value, "tzinfo")


def dumps(value: Any, *, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, default=_json_default, indent=indent)


def print_json(value: Any, *, indent: int | None = None) -> None:
    write_out(dumps(value, indent=indent) + "\n")


def print_json_lines(values: Iterable[Any]) -> None:
    write_out("".join(dumps(value) + "\n" for value in values))


def write_out(text: str) -> None:
    """Write to stdout; a closed pipe (``xflow list | head``) is not an error."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the interpreter flushes it at exit
        except OSError:
            pass


def _json_default(value: Any) -> Any:
    if hasattr(value, "tzinfo") and hasattr(value, "isoformat"):
        return timestamp(value)
    return str(value)


# --- colour -----------------------------------------------------------------------------------------
_CODES = {"red": "31", "green": "32", "yellow": "33", "bold": "1", "dim": "2"}


def colour_enabled(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, colour: str, stream: TextIO) -> str:
    """``text`` in ``colour`` when ``stream`` is a terminal that wants colour, else unchanged."""
    if not colour_enabled(stream):
        return text
    return f"\033[{_CODES[colour]}m{text}\033[0m"


def error(message: str, *, prefix: str = "error") -> None:
    """One line on stderr, ``prefix`` in red on a terminal."""
    print(f"{paint(prefix + ':', 'red', sys.stderr)} {message}", file=sys.stderr)
