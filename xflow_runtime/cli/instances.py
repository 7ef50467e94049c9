"""``xflow resume ID``, ``xflow list`` and ``xflow show ID``: durable instances.

``resume`` continues an instance after its last completed step and prints its output like
``xflow run`` (exit 0/1, 3 after ``--wait-timeout``; what it waits for on stderr). ``list`` prints
one line per instance (``--json`` for JSON lines); ``show`` prints one instance as JSON (``--json``
is accepted for uniformity): status, input, output, error, and the states it entered with their
input, output, error, duration and LLM usage. Times are ISO 8601 with the zone (``cli/output.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from xflow_runtime.cli import output
from xflow_runtime.cli.attach import add_follow_options, follow, follow_options, watcher_for
from xflow_runtime.cli.run import add_instance_options, add_workflow_option, guarded, runtime_options
from xflow_runtime.errors import XFlowError


def register(subparsers: Any, name: str) -> None:
    if name == "resume":
        parser = subparsers.add_parser(name, help="resume a durable instance",
                                       description="Resume a durable instance after its last completed step.")
        parser.add_argument("instance_id", metavar="ID")
        add_instance_options(parser)
        add_workflow_option(parser)
        add_follow_options(parser, detach=False)
        output.add_json_flag(parser, "print the output as JSON (the default); after --wait-timeout, "
                                     "what the instance waits for as one JSON object")
        parser.set_defaults(handler=resume_command)
    elif name == "list":
        parser = subparsers.add_parser(name, help="list workflow instances")
        parser.add_argument("--db", metavar="URL", default=None, help="durable store URL")
        parser.add_argument("--status", help="only instances with this status (PENDING, SUCCESS, ERROR…)")
        parser.add_argument("--limit", type=int, default=50, help="at most this many (newest first)")
        output.add_json_flag(parser, "one JSON object per line")
        parser.set_defaults(handler=list_command)
    elif name == "show":
        parser = subparsers.add_parser(name, help="show one instance")
        parser.add_argument("instance_id", metavar="ID")
        parser.add_argument("--db", metavar="URL", default=None, help="durable store URL")
        output.add_json_flag(parser, "print JSON (the default and only format)")
        parser.set_defaults(handler=show_command)
    else:  # pragma: no cover - main.py only passes the names above
        raise ValueError(f"unknown instances command {name!r}")


def resume_command(args: argparse.Namespace) -> int:
    try:
        watcher = watcher_for(args, ephemeral=False)
        options = runtime_options(args, ephemeral=False, watcher=watcher)
    except XFlowError as error:
        print(f"xflow resume: {error}", file=sys.stderr)
        return output.USAGE

    async def resume() -> Any:
        from xflow_runtime.runtime import Runtime

        async with Runtime(**options) as runtime:
            watcher.plan = await plan_of(runtime, args.instance_id)
            handle = await runtime.resume(args.instance_id)
            return await follow(handle, watcher, follow_options(args), durable=True)

    return with_llm_script(args, lambda: guarded(resume, resumable=args.instance_id, as_json=args.json,
                                                 wait_timeout=args.wait_timeout))


async def plan_of(runtime: Any, instance_id: str) -> Any:
    """The plan of a recorded instance, from its workflow file, to describe its waits (``None``
    when the instance is unknown or the file is gone: then only the generic notice is printed)."""
    try:
        described = await runtime.describe(instance_id)
        return runtime.load(described["file"]) if described.get("file") else None
    except (XFlowError, OSError):
        return None


def with_llm_script(args: argparse.Namespace, run: Any) -> int:
    """``run()`` with LLM calls answered from ``--llm-script`` when given (exit 2 if unreadable)."""
    if not getattr(args, "llm_script", None):
        return int(run())
    from xflow_runtime.llm.scripted import scripted_llm

    try:
        with scripted_llm(args.llm_script):
            return int(run())
    except XFlowError as error:
        print(f"xflow: {error}", file=sys.stderr)
        return output.USAGE


def list_command(args: argparse.Namespace) -> int:
    async def rows() -> list[dict[str, Any]]:
        from xflow_runtime.engine.durable.client import DurableStore
        from xflow_runtime.runtime.execution import describe_status

        status = args.status.upper() if args.status else None
        async with DurableStore(args.db) as store:
            return [describe_status(s) for s in await store.list(status=status, limit=args.limit)]

    try:
        found = [output.with_timestamps(row) for row in asyncio.run(rows())]
    except XFlowError as error:
        output.error(str(error))
        return output.FAILED
    if args.json:
        output.print_json_lines(found)
        return output.OK
    if not found:
        print("no instances", file=sys.stderr)
        return output.OK
    lines = [f"{'INSTANCE':<38} {'STATUS':<10} {'CREATED':<29} WORKFLOW"]
    lines += [f"{row['instance_id']:<38} {row['status']:<10} {row['created_at'] or '-':<29} {row['workflow']}"
              for row in found]
    output.write_out("\n".join(lines) + "\n")
    return output.OK


def show_command(args: argparse.Namespace) -> int:
    async def describe() -> dict[str, Any]:
        from xflow_runtime.engine.durable.client import DurableStore
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
        output.error(str(error))
        return output.FAILED
    output.print_json(output.with_timestamps(described), indent=2)
    return output.OK
