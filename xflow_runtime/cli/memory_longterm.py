"""``xflow memory memories|erase-user|consent``: long-term memory from the command line.

    xflow memory memories list   --agent A [--user U] [--query Q] [--kind memory|fact] [--offset N] [--limit N]
    xflow memory memories get    ID --agent A [--user U]
    xflow memory memories create --agent A [--user U] --title T --content C [--tag X …]
    xflow memory memories update ID --agent A [--user U] [--title T] [--content C] [--tag X …]
    xflow memory memories delete ID --agent A [--user U]
    xflow memory erase-user USER [--json] [--checkpoint-wait S]   # GDPR erasure in --tenant: memory and
                                            # durable store; a receipt (exit 1 if a WAL keeps old copies)
    xflow memory export-user USER [--output FILE]   # everything stored about USER, one JSON document
    xflow memory consent USER --allow|--refuse|--unset|--show

Exit codes: 0 success, 1 failure (not found, title conflict, database error), 2 usage error.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from xflow_runtime.cli.memory import run_async
from xflow_runtime.cli.output import timestamp


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    scoped = argparse.ArgumentParser(add_help=False, parents=[common])
    scoped.add_argument("--agent", required=True, help="the agent whose memories these are")
    scoped.add_argument("--user", default=None, help="the end user (omit for the agent's own memories)")
    scoped.add_argument("--json", action="store_true", help="JSON output")

    memories = commands.add_parser("memories", help="list, get, create, update or delete long-term memories",
                                   description="Manage long-term memories of one agent (and user).")
    actions = memories.add_subparsers(dest="memories_action", metavar="ACTION", required=True)

    listing = actions.add_parser("list", parents=[scoped], help="newest first, or by relevance with --query")
    listing.add_argument("--query", help="keyword filter (ranked by relevance)")
    listing.add_argument("--kind", choices=("memory", "fact"), help="only agent memories or only facts")
    listing.add_argument("--offset", type=int, default=0)
    listing.add_argument("--limit", type=int, default=50)
    listing.set_defaults(handler=_list)

    get = actions.add_parser("get", parents=[scoped], help="print one memory")
    get.add_argument("memory_id", metavar="ID")
    get.set_defaults(handler=_get)

    create = actions.add_parser("create", parents=[scoped], help="create (fails if the title exists)")
    create.add_argument("--title", required=True)
    create.add_argument("--content", required=True)
    create.add_argument("--tag", action="append", default=[], help="a tag (repeatable)")
    create.set_defaults(handler=_create)

    update = actions.add_parser("update", parents=[scoped], help="change title, content or tags")
    update.add_argument("memory_id", metavar="ID")
    update.add_argument("--title")
    update.add_argument("--content")
    update.add_argument("--tag", action="append", default=None, help="replace the tags (repeatable)")
    update.set_defaults(handler=_update)

    delete = actions.add_parser("delete", parents=[scoped], help="delete one memory")
    delete.add_argument("memory_id", metavar="ID")
    delete.set_defaults(handler=_delete)

    erase = commands.add_parser("erase-user", parents=[common],
                                help="erase everything stored about a user (GDPR): memory of every agent "
                                     "and the user's instances in the durable store")
    erase.add_argument("user", metavar="USER")
    erase.add_argument("--json", action="store_true", help="print the receipt as JSON")
    erase.add_argument("--checkpoint-wait", type=float, default=10.0, metavar="SECONDS",
                       help="how long to wait for readers of a SQLite store's WAL, which keeps old copies of "
                            "the deleted rows until it is checkpointed (past it: exit 1, run again; default 10)")
    erase.set_defaults(handler=_erase)

    export = commands.add_parser("export-user", parents=[common],
                                 help="write everything stored about a user as one JSON document")
    export.add_argument("user", metavar="USER")
    export.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")
    export.add_argument("--json", action="store_true", help="accepted for uniformity: the export is always JSON")
    export.set_defaults(handler=_export)

    consent = commands.add_parser("consent", parents=[common], help="show or set a user's consent to fact extraction")
    consent.add_argument("user", metavar="USER")
    choice = consent.add_mutually_exclusive_group(required=True)
    choice.add_argument("--allow", dest="consent", action="store_const", const=True)
    choice.add_argument("--refuse", dest="consent", action="store_const", const=False)
    choice.add_argument("--unset", dest="consent", action="store_const", const="unset")
    choice.add_argument("--show", dest="consent", action="store_const", const="show")
    consent.add_argument("--json", action="store_true", help="print {tenant, user, consent}")
    consent.set_defaults(handler=_consent)


def _open(args: argparse.Namespace) -> Any:
    from xflow_runtime.cli.memory import open_memory_engine
    from xflow_runtime.memory.longterm import LongTermMemory

    return LongTermMemory(open_memory_engine(args.db))


def _scope(args: argparse.Namespace) -> Any:
    from xflow_runtime.memory.longterm import MemoryScope

    return MemoryScope(tenant=args.tenant, agent=args.agent, user=args.user)


def _print(memory: Any, as_json: bool) -> None:
    if as_json:  # times with their zone (SQLite hands them back without it)
        times = {name: timestamp(getattr(memory, name)) for name in ("created_at", "updated_at")
                 if getattr(memory, name, None) is not None}
        print(json.dumps({**memory.to_dict(), **times}, ensure_ascii=False, sort_keys=True))
    elif memory.kind == "memory":
        tags = f" [{', '.join(memory.tags)}]" if memory.tags else ""
        print(f"{memory.id}  {memory.title}{tags}: {memory.content}")
    else:
        print(f"{memory.id}  fact/{memory.category} ({memory.importance}): {memory.content}")


def _list(args: argparse.Namespace) -> int:
    async def run() -> int:
        async with _open(args) as memory:
            page = await memory.list(_scope(args), kind=args.kind, query=args.query, offset=args.offset,
                                     limit=args.limit)
        for item in page.items:
            _print(item, args.json)
        if not page.items and not args.json:
            print("no memories")
        if page.next_offset is not None and not args.json:
            print(f"(more: --offset {page.next_offset})")
        return 0
    return run_async(run)


def _get(args: argparse.Namespace) -> int:
    async def run() -> int:
        async with _open(args) as memory:
            _print(await memory.get(_scope(args), args.memory_id), args.json)
        return 0
    return run_async(run)


def _create(args: argparse.Namespace) -> int:
    async def run() -> int:
        async with _open(args) as memory:
            _print(await memory.create(_scope(args), args.title, args.content, args.tag), args.json)
        return 0
    return run_async(run)


def _update(args: argparse.Namespace) -> int:
    async def run() -> int:
        async with _open(args) as memory:
            _print(await memory.update(_scope(args), args.memory_id, title=args.title, content=args.content,
                                       tags=args.tag), args.json)
        return 0
    return run_async(run)


def _delete(args: argparse.Namespace) -> int:
    async def run() -> int:
        async with _open(args) as memory:
            await memory.delete(_scope(args), args.memory_id)
        if args.json:
            print(json.dumps({"deleted": args.memory_id}))
        else:
            print(f"deleted memory {args.memory_id}")
        return 0
    return run_async(run)


def _erase(args: argparse.Namespace) -> int:
    async def run() -> int:
        from xflow_runtime.privacy.erasure import erase_user

        receipt = await erase_user(args.user, tenant=args.tenant, database_url=args.db,
                                   checkpoint_wait=args.checkpoint_wait)
        if args.json:
            print(json.dumps(receipt.to_dict(), sort_keys=True))
            return 0
        print(f"erased user {args.user!r} in tenant {args.tenant!r}: {receipt.total} rows")
        for store in receipt.stores:
            if not store.present:
                print(f"  {store.store}: no store at {store.location}")
                continue
            counts = "  ".join(f"{name}={count}" for name, count in sorted(store.deleted.items()))
            print(f"  {store.store} ({store.location}): {counts}")
        if receipt.cancelled_instances:
            print(f"  cancelled before erasing: {', '.join(receipt.cancelled_instances)}")
        return 0
    return run_async(run)


def _export(args: argparse.Namespace) -> int:
    async def run() -> int:
        from pathlib import Path

        from xflow_runtime.privacy.export import export_user

        document = json.dumps(await export_user(args.user, tenant=args.tenant, database_url=args.db),
                              ensure_ascii=False, sort_keys=True, indent=2, default=str)
        if args.output:
            Path(args.output).write_text(document + "\n", encoding="utf-8")
        else:
            print(document)
        return 0
    return run_async(run)


def _consent(args: argparse.Namespace) -> int:
    async def run() -> int:
        async with _open(args) as memory:
            if args.consent != "show":
                await memory.set_consent(args.tenant, args.user, None if args.consent == "unset" else args.consent)
            state = await memory.consent(args.tenant, args.user)
        if args.json:
            print(json.dumps({"tenant": args.tenant, "user": args.user, "consent": state}))
            return 0
        print(f"consent of {args.user!r} in tenant {args.tenant!r}: "
              f"{ {True: 'allowed', False: 'refused', None: 'unset (allowed)'}[state] }")
        return 0
    return run_async(run)
