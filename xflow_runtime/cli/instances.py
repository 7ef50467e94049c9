"""``xflow resume ID``, ``xflow list`` and ``xflow show ID``: durable instances.

``resume`` continues an instance after its last completed step and prints its output like
``xflow run`` (exit 0/1). ``list`` prints one line per instance (``--json`` for JSON lines);
``show`` prints one instance as JSON: status, input, output, error, and the states it entered with
their input, output, error, duration and LLM usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import datetime, timezone
from typing import Any

from xflow_runtime.cli.run import add_instance_options, guarded, runtime_options
from xflow_runtime.errors import XFlowError


def register(subparsers: Any, name: str) -> None:
    if name == "resume":
        parser = subparsers.add_parser(name, help="resume a durable instance",
                                       description="Resume a durable instance after its last completed step.")
        parser.add_argument("instance_id", metavar="ID")
        add_instance_options(parser)
        parser.set_defaults(handler=resume_command)
    elif name == "list":
        parser = subparsers.add_parser(name, help="list workflow instances")
        parser.add_argument("--db", metavar="URL", default=None, help="durable store URL")
        parser.add_argument("--status", help="only instances with this status (PENDING, SUCCESS, ERROR…)")
        parser.add_argument("--limit", type=int, default=50, help="at most this many (newest first)")
        parser.add_argument("--json", action="store_true", help="one JSON object per line")
        parser.set_defaults(handler=list_command)
    elif name == "show":
        parser = subparsers.add_parser(name, help="show one instance")
        parser.add_argument("instance_id", metavar="ID")
        parser.add_argument("--db", metavar="URL", default=None, help="durable store URL")
        parser.set_defaults(handler=show_command)
    else:  # pragma: no cover - main.py only passes the names above
        raise ValueError(f"unknown instances command {name!r}")


def resume_command(args: argparse.Namespace) -> int:
    try:
        options = runtime_options(args, ephemeral=False)
    except XFlowError as error:
        print(f"xflow resume: {error}", file=sys.stderr)
        return 2

    async def resume() -> Any:
        from xflow_runtime.runtime import Runtime

        async with Runtime(**options) as runtime:
            handle = await runtime.resume(args.instance_id)
            return await handle.result()

    return guarded(resume, resumable=args.instance_id)


def list_command(args: argparse.Namespace) -> int:
    async def rows() -> list[dict[str, Any]]:
        from xflow_runtime.engine.durable_client import DurableStore
        from xflow_runtime.runtime.execution import describe_status

        status = args.status.upper() if args.status else None
        async with DurableStore(args.db) as store:
            return [describe_status(s) for s in await store.list(status=status, limit=args.limit)]

    try:
        found = asyncio.run(rows())
    except XFlowError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.json:
        for row in found:
            print(json.dumps(row, default=str))
        return 0
    if not found:
        print("no instances", file=sys.stderr)
        return 0
    print(f"{'INSTANCE':<38} {'STATUS':<10} {'CREATED (UTC)':<20} WORKFLOW")
    for row in found:
        print(f"{row['instance_id']:<38} {row['status']:<10} {_time(row['created_at']):<20} {row['workflow']}")
    return 0


def show_command(args: argparse.Namespace) -> int:
    async def describe() -> dict[str, Any]:
        from xflow_runtime.engine.durable_client import DurableStore
        from xflow_runtime.runtime import UnknownInstance
        from xflow_runtime.runtime.execution import describe_durable

        async with DurableStore(args.db) as store:
            status = await store.status(args.instance_id)
            if status is None:
                raise UnknownInstance(f"no instance {args.instance_id!r} in {store.display_url}")
            return describe_durable(status, await store.history(args.instance_id))

    try:
        described = asyncio.run(describe())
    except XFlowError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(described, indent=2, ensure_ascii=False, default=str))
    return 0


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
