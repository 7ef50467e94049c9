"""``xflow memory …``: manage chat histories (and, later, long-term memories).

Sub-commands come from provider modules, each exposing ``add_commands(subparsers, common)``;
``common`` is a parent parser holding the options every memory sub-command shares (``--db``,
``--tenant``). To add ``memories``, ``erase-user`` or ``consent``, write such a module and add
its name to :data:`PROVIDERS`.

Exit codes: 0 success, 1 the operation failed (unknown chat, database error), 2 usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from typing import Any, Awaitable, Callable

from xflow_runtime.errors import XFlowError

#: modules adding sub-commands to ``xflow memory``, in help order
PROVIDERS: tuple[str, ...] = ("xflow_runtime.memory.chat.cli", "xflow_runtime.cli.memory_longterm",
                               "xflow_runtime.cli.memory_reindex")


def register(subparsers: Any, name: str) -> None:
    parser = subparsers.add_parser(
        name, help="manage chat histories and long-term memories",
        description="Manage chat histories and long-term memories.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", metavar="URL", default=None,
                        help="database URL (default: $XFLOW_DATABASE_URL or SQLite under ./.xflow/)")
    common.add_argument("--tenant", default="default", help="tenant (default: %(default)s)")
    commands = parser.add_subparsers(dest="memory_command", metavar="SUBCOMMAND", required=True)
    for module_name in PROVIDERS:
        importlib.import_module(module_name).add_commands(commands, common)


def run_async(operation: Callable[[], Awaitable[int]]) -> int:
    """Run a sub-command's coroutine; a user-facing error prints one line and exits 1."""
    try:
        return asyncio.run(operation())
    except XFlowError as error:
        print(f"xflow memory: {error}", file=sys.stderr)
        return 1
