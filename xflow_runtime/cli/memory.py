"""``xflow memory …``: manage chat histories (and, later, long-term memories).

Every sub-command finds memory by the one rule of :mod:`xflow_runtime.settings` (``--db`` means
what it means to ``xflow run``) and never creates a store. Sub-commands come from provider
modules, each exposing ``add_commands(subparsers, common)``;
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
from typing import Any, Callable, Coroutine

from xflow_runtime.errors import XFlowError

#: modules adding sub-commands to ``xflow memory``, in help order
PROVIDERS: tuple[str, ...] = ("xflow_runtime.cli.memory_chat", "xflow_runtime.cli.memory_longterm",
                               "xflow_runtime.cli.memory_reindex")


def register(subparsers: Any, name: str) -> None:
    parser = subparsers.add_parser(
        name, help="manage chat histories and long-term memories",
        description="Manage chat histories and long-term memories.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", metavar="URL", default=None,
                        help="the store as given to xflow run (default: $XFLOW_DATABASE_URL, else SQLite "
                             "under ./.xflow/); memory is in xflow.db beside a SQLite store, or in the "
                             "PostgreSQL database itself")
    common.add_argument("--tenant", default="default", help="tenant (default: %(default)s)")
    commands = parser.add_subparsers(dest="memory_command", metavar="SUBCOMMAND", required=True)
    for module_name in PROVIDERS:
        importlib.import_module(module_name).add_commands(commands, common)


def open_memory_engine(db: str | None) -> Any:
    """The engine of the memory store that ``xflow run --db`` (same setting) writes to. A store
    without memory tables is an error naming where it looked: commands never create one."""
    from xflow_runtime.settings import locate, redact
    from xflow_runtime.storage.database import open_existing_database

    where = locate(db)
    engine = open_existing_database(where.memory_url)
    if engine is None:
        raise XFlowError(f"no chat or long-term memory at {redact(where.memory_url)} ({where.origin_text}): "
                         "nothing has been stored there (xflow run/chat create it when an agent first "
                         "stores memory)")
    return engine


def run_async(operation: Callable[[], Coroutine[Any, Any, int]]) -> int:
    """Run a sub-command's coroutine; a user-facing error prints one line and exits 1."""
    try:
        return asyncio.run(operation())
    except XFlowError as error:
        print(f"xflow memory: {error}", file=sys.stderr)
        return 1
