"""``xflow send ID``: deliver CloudEvents or a user message to a waiting durable instance.

By default the command then runs the instance (from its last completed step, like ``xflow
resume``) and prints its output, or, if it waits again, what for — the form a waiting run prints
after ``--detach`` or ``--wait-timeout``. ``--no-wait`` only delivers (what is delivered is stored
durably and read when the instance next waits) and prints ``{"instance_id", "delivered"}``: the
form to use while another process still runs the instance, such as an ``xflow run`` still waiting
in another shell.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from xflow_runtime.cli import output
from xflow_runtime.cli.attach import add_follow_options, follow, follow_options, watcher_for
from xflow_runtime.cli.instances import plan_of, with_llm_script
from xflow_runtime.cli.run import (
    UsageError, add_instance_options, add_workflow_option, guarded, read_events, runtime_options,
)
from xflow_runtime.errors import XFlowError

def register(subparsers: Any, name: str) -> None:
    parser = subparsers.add_parser(name, help="deliver events or a message to a waiting instance",
                                   description=__doc__.split("\n\n")[0] + "\n\n" + __doc__.split("\n\n")[1])
    parser.add_argument("instance_id", metavar="ID", help="the durable instance")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--event", action="append", default=[], metavar="JSON|@FILE",
                      help="a CloudEvent (inline JSON or @events.jsonl, one per line); repeatable")
    what.add_argument("--message", metavar="TEXT", help="the next user message of a waiting agent conversation")
    parser.add_argument("--no-wait", action="store_true",
                        help="only deliver; do not run the instance (another process runs it)")
    add_instance_options(parser)
    add_workflow_option(parser)
    add_follow_options(parser, detach=False)
    output.add_json_flag(parser, "print JSON: the output, {instance_id, delivered} with --no-wait, or "
                                 "what the instance waits for after --wait-timeout")
    parser.set_defaults(handler=send_command)


def send_command(args: argparse.Namespace) -> int:
    try:
        events = read_events(args.event)
        watcher = watcher_for(args, ephemeral=False)
        options = runtime_options(args, ephemeral=False, watcher=watcher)
    except XFlowError as error:
        print(f"xflow send: {error}", file=sys.stderr)
        return output.USAGE

    async def send() -> Any:
        from xflow_runtime.runtime import Runtime

        async with Runtime(**options) as runtime:
            described = await runtime.describe(args.instance_id)
            if described["status"] in ("SUCCESS", "ERROR", "CANCELLED"):
                raise UsageError(f"instance {args.instance_id} has ended ({described['status']}): "
                                 f"nothing waits for what you send")
            for event in events:
                await runtime.send_event(event, instance_id=args.instance_id)
            if args.message is not None:
                await runtime.send_message(args.instance_id, args.message)
            if args.no_wait:  # printed as the command's JSON result
                return {"instance_id": args.instance_id, "delivered": len(events) + (args.message is not None)}
            watcher.plan = await plan_of(runtime, args.instance_id)
            handle = await runtime.resume(args.instance_id)
            return await follow(handle, watcher, follow_options(args), durable=True)

    return with_llm_script(args, lambda: guarded(send, resumable=args.instance_id, as_json=args.json,
                                                 wait_timeout=args.wait_timeout))
