"""``xflow worker --db postgresql://… [--workflows DIR]``: one process of a worker fleet.

Every worker of a fleet shares one PostgreSQL: instance starts go through a durable queue, any
worker runs them, a worker that dies is detected by its silent heartbeat and its instances continue
on a live worker from their last completed step (specs/deployment.md). SIGTERM (or Ctrl-C) drains:
no new step starts, steps in flight get ``--drain-seconds`` to finish, the rest is handed back to
the fleet at once, the process exits.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xflow_runtime.errors import XFlowError

if TYPE_CHECKING:
    from xflow_runtime.engine.index_schedule import IndexSchedule
    from xflow_runtime.runtime import Runtime


def register(subparsers: Any, name: str) -> None:
    parser = subparsers.add_parser(name, help="run instances as one worker of a fleet on PostgreSQL",
                                   description=__doc__.split("\n\n")[0])
    add_worker_options(parser)
    parser.add_argument("--json", action="store_true", help="print the ready line as JSON")
    parser.set_defaults(handler=worker_command)


def add_worker_options(parser: argparse.ArgumentParser) -> None:
    """The options ``xflow worker`` and ``xflow serve --workers`` share."""
    parser.add_argument("--db", metavar="URL", default=None,
                        help="the fleet's PostgreSQL (default $XFLOW_DATABASE_URL)")
    parser.add_argument("--workflows", metavar="DIR", default=None,
                        help="folder of workflow definitions (checked at start; instances carry their own)")
    parser.add_argument("--concurrency", type=int, default=None, metavar="N",
                        help="instances one worker runs at once (fleet-wide setting)")
    parser.add_argument("--global-concurrency", type=int, default=None, metavar="N",
                        help="instances the whole fleet runs at once")
    parser.add_argument("--starts-per-minute", type=int, default=None, metavar="N",
                        help="at most N instance starts per rolling minute, fleet-wide")
    parser.add_argument("--llm-rate-limit", action="append", default=[], metavar="KEY=CALLS/SECONDS",
                        help="fleet-wide limit on LLM calls to a provider or model (openai=600/60); repeatable")
    parser.add_argument("--llm-api-base", metavar="URL", default=None,
                        help="send every LLM call to this OpenAI-compatible endpoint (a gateway)")
    parser.add_argument("--drain-seconds", type=float, default=20.0,
                        help="on SIGTERM, how long steps in flight may take to finish")
    add_index_scopes_options(parser)


def add_index_scopes_options(parser: argparse.ArgumentParser) -> None:
    """``xflow memory index-scopes`` on a schedule, in the processes that run work (fleet-wide: the
    last process started decides; specs/deployment.md)."""
    parser.add_argument("--index-scopes-every", metavar="PERIOD", default="10m",
                        help="build the own indexes of large memory scopes this often (10m default, 30s, 1h; "
                             "0: never; PostgreSQL memory only)")
    from xflow_runtime.cli.memory_reindex import add_threshold_options

    add_threshold_options(parser, prefix="index-scopes-")


def index_schedule(args: argparse.Namespace) -> "IndexSchedule":
    """The :class:`~xflow_runtime.engine.index_schedule.IndexSchedule` of the options (checked:
    a bad value stops the process before it starts)."""
    from xflow_runtime.engine.index_schedule import IndexSchedule, parse_every

    for name in ("index_scopes_threshold", "index_scopes_keyword_threshold"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise XFlowError(f"--{name.replace('_', '-')} must be at least 1")
    return IndexSchedule(parse_every(args.index_scopes_every), args.index_scopes_threshold,
                         args.index_scopes_keyword_threshold)


def index_schedule_argv(args: argparse.Namespace) -> list[str]:
    """The same options for a worker process this one starts (``xflow serve --workers``)."""
    argv = ["--index-scopes-every", str(args.index_scopes_every)]
    for name in ("index_scopes_threshold", "index_scopes_keyword_threshold"):
        if getattr(args, name) is not None:
            argv += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    return argv


async def apply_index_schedule(runtime: "Runtime", settings: "IndexSchedule") -> None:
    """After the runtime opened: the fleet's index-scopes schedule (memory on PostgreSQL only)."""
    from xflow_runtime.engine import index_schedule as schedule

    await asyncio.to_thread(schedule.apply, settings, runtime.chat_memory_url)


def fleet_options(args: argparse.Namespace, *, run_instances: bool = True) -> Any:
    from xflow_runtime.engine.fleet_options import FleetOptions

    for name in ("concurrency", "global_concurrency", "starts_per_minute"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise XFlowError(f"--{name.replace('_', '-')} must be at least 1")
    from xflow_runtime.engine.rate_limit import RateLimit

    limits = tuple(getattr(args, "llm_rate_limit", ()) or ())
    for limit in limits:
        RateLimit.parse(limit)  # a bad value stops the worker before it starts
    return FleetOptions(run_instances=run_instances, worker_concurrency=args.concurrency, llm_rate_limits=limits,
                        global_concurrency=args.global_concurrency,
                        starts_per_period=None if args.starts_per_minute is None else (args.starts_per_minute, 60.0))


def llm_settings(args: argparse.Namespace) -> Any:
    if not args.llm_api_base:
        return None
    from xflow_runtime.llm.client import LLMSettings

    return LLMSettings(api_base=args.llm_api_base, api_key=os.environ.get("XFLOW_LLM_API_KEY"))


def worker_command(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_work(args))
    except XFlowError as error:
        print(f"xflow worker: {error}", file=sys.stderr)
        return 2


async def _work(args: argparse.Namespace) -> int:
    import json

    from xflow_runtime.runtime import Runtime

    scopes = index_schedule(args)
    runtime = Runtime("durable", database_url=args.db, fleet=fleet_options(args), llm=llm_settings(args))
    loaded = []
    for path in _workflow_files(args.workflows):  # checked now; an instance runs the text it recorded
        try:
            loaded.append(runtime.load(path))
        except XFlowError as error:
            print(f"xflow worker: skipping {path.name}: {str(error).splitlines()[0]}", file=sys.stderr)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if args.llm_api_base:  # seconds of CPU: at start, not in the first LLM call
        from xflow_runtime.llm.client import preload

        await asyncio.to_thread(preload)
    await runtime.open()
    for warning in await runtime.apply_schedules(loaded, prune=args.workflows is not None):
        print(f"xflow worker: schedule not started: {warning}", file=sys.stderr)
    await apply_index_schedule(runtime, scopes)
    ready = {"executor_id": runtime.executor_id, "pid": os.getpid(), "workflows": len(loaded)}
    print(json.dumps(ready) if args.json else f"xflow worker {ready['executor_id']} ready "
          f"({len(loaded)} workflow(s))", flush=True)
    await stop.wait()
    finished = await runtime.drain(args.drain_seconds)
    await runtime.close()
    print(f"xflow worker {ready['executor_id']} stopped ({'drained' if finished else 'steps cut short'})",
          file=sys.stderr, flush=True)
    sys.stdout.flush()
    # Threads stuck in a step past the drain would hold a normal exit; what they do is no longer
    # recorded (DBOS is closed) and their instances are back on the queue.
    os._exit(0)


def _workflow_files(folder: str | None) -> list[Path]:
    if folder is None:
        return []
    root = Path(folder)
    if not root.is_dir():
        raise XFlowError(f"--workflows {folder}: not a folder")
    return sorted(p for p in root.iterdir() if p.suffix in (".yaml", ".yml", ".json") and p.is_file()
                  and not p.name.endswith((".replies.yaml", ".replies.yml")))
