"""``xflow run FILE``: run one instance and print its output as JSON on stdout.

Exit codes (the table is specs/cli.md): 0 the instance completed (or, with ``--detach``, waits);
1 it failed (or the runtime could not run it), with a clear message on stderr; 2 the definition is
invalid (diagnostics on stderr) or the command line is; 3 ``--wait-timeout`` passed while it waits.
When the instance settles in a waiting state, stderr says what it waits for and the exact
``xflow send`` command that delivers it (``cli/waiting.py``).

The durable engine is the default (SQLite under ``./.xflow/``, or ``--db URL`` /
``$XFLOW_DATABASE_URL``); ``--ephemeral`` runs on the in-process engine, imports nothing
DBOS-related and persists nothing. Options shared with ``xflow resume`` are added by
:func:`add_instance_options`; a new option is one ``add_argument`` there plus one line in
:func:`runtime_options`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from pathlib import Path
from typing import Any, Callable, TextIO

from xflow_runtime.interpreter import records
from xflow_runtime.cli import output
from xflow_runtime.cli.attach import (
    FollowOptions, StoppedFollowing, add_follow_options, fan_out, follow, follow_options, report_stopped,
    watcher_for,
)
from xflow_runtime.cli.output import add_json_flag
from xflow_runtime.cli.waiting import WaitWatcher
from xflow_runtime.errors import DefinitionError, WorkflowFailed, XFlowError


class UsageError(XFlowError):
    """A command-line value is malformed (exit code 2)."""


def register(subparsers: Any, name: str) -> None:
    parser = subparsers.add_parser(name, help="run a workflow and print its output as JSON",
                                   description=__doc__.split("\n\n")[0])
    parser.add_argument("file", help="the workflow file (YAML or JSON)")
    parser.add_argument("--input", metavar="JSON|@FILE|-", default=None,
                        help="workflow input: inline JSON, @file.json, or - for stdin (default {})")
    parser.add_argument("--id", dest="instance_id", metavar="ID",
                        help="instance id (durable: running again with the same id attaches to it)")
    parser.add_argument("--event", action="append", default=[], metavar="JSON|@FILE",
                        help="CloudEvents to deliver in order: inline JSON or @events.jsonl "
                             "(one event per line); repeatable")
    parser.add_argument("--ephemeral", action="store_true",
                        help="run in process: nothing persisted, no resume (fastest start)")
    add_identity_options(parser)
    add_instance_options(parser)
    add_follow_options(parser)
    add_json_flag(parser, "print the output as JSON (the default), and with --detach/--wait-timeout "
                          "what the instance waits for as one JSON object")
    parser.set_defaults(handler=run_command)


def add_identity_options(parser: argparse.ArgumentParser) -> None:
    """Who runs the instance (scopes chat memory) and the subflows it may call (``run``, ``chat``)."""
    parser.add_argument("--tenant", metavar="T", default=None, help="tenant of the instance (default: default)")
    parser.add_argument("--user", metavar="U", default=None,
                        help="the user the instance acts for (chat memory scope: user)")
    add_workflow_option(parser)


def add_workflow_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workflow", dest="workflows", action="append", default=[], metavar="FILE",
                        help="a workflow that subFlowRef can call, by its id; repeatable")


def add_instance_options(parser: argparse.ArgumentParser) -> None:
    """Options of every command that runs instances (``run``, ``resume``, ``send``)."""
    parser.add_argument("--llm-script", metavar="FILE", default=None,
                        help="answer LLM calls from a reply script (YAML) instead of a provider: no API key")
    parser.add_argument("--secret", action="append", default=[], metavar="NAME=VALUE",
                        help="a value for $SECRETS.NAME; repeatable")
    parser.add_argument("--secrets-file", metavar="FILE",
                        help="secrets as a JSON/YAML object or a .env file (quotes, export, comments as python-dotenv reads them)")
    parser.add_argument("--db", metavar="URL", default=None,
                        help="durable store: sqlite:///FILE or postgresql://… "
                             "(default $XFLOW_DATABASE_URL, else SQLite under ./.xflow/); chat memory "
                             "lives in the same PostgreSQL database or in xflow.db next to the SQLite "
                             "file (with --ephemeral, only when --db is given)")
    add_embedding_option(parser)
    parser.add_argument("--events-out", metavar="FILE",
                        help="append produced CloudEvents as JSON lines to FILE (default stderr)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


def add_embedding_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--embedding-model", metavar="MODEL", default=None,
                        help="embedding model of long-term memory (litellm name; default: none, "
                             "memory_search runs on keywords only)")
    parser.add_argument("--embedding-mode", metavar="MODE", default="none",
                        help="how the embedding model tells queries from documents: e5, bge (prefixes), "
                             "input-type, cohere, voyage (input_type), none (default)")


def long_term_options(args: argparse.Namespace) -> dict[str, Any]:
    """``Runtime(long_term=…)`` from ``--embedding-model`` (nothing imported without it)."""
    model = getattr(args, "embedding_model", None)
    if model is None:
        return {}
    if not model.strip():
        raise UsageError("--embedding-model needs a model name")
    from xflow_runtime.memory.longterm import EmbeddingModes, LongTermMemoryError, LongTermOptions

    try:
        modes = EmbeddingModes.named(getattr(args, "embedding_mode", "none"))
    except LongTermMemoryError as error:
        raise UsageError(str(error)) from None
    return {"long_term": LongTermOptions(embedding_model=model.strip(), embedding_modes=modes)}


def runtime_options(args: argparse.Namespace, *, ephemeral: bool,
                    watcher: WaitWatcher | None = None) -> dict[str, Any]:
    """Keyword arguments of :class:`~xflow_runtime.runtime.Runtime` from the shared options;
    ``watcher`` also listens to the history (it says what the instance waits for)."""
    options: dict[str, Any] = {
        "engine": "inprocess" if ephemeral else "durable",
        "secrets": read_secrets(args.secret, args.secrets_file),
        "on_event": event_writer(args.events_out),
    }
    if getattr(args, "workflows", None):
        options["workflows"] = [Path(file) for file in args.workflows]
    if not ephemeral or args.db:  # in process, a --db URL only holds chat memory
        options["database_url"] = args.db
    if not ephemeral:
        # A CLI process recovers nothing at launch (it could steal a live instance of another
        # process); crashed instances are resumed explicitly with ``xflow resume``.
        options["executor_id"] = f"cli-{uuid.uuid4().hex[:12]}"
    options.update(long_term_options(args))
    progress = ProgressPrinter(sys.stderr) if not args.quiet and sys.stderr.isatty() else None
    if progress or watcher:
        options["on_history"] = fan_out(progress, watcher)
    return options


def run_command(args: argparse.Namespace) -> int:
    try:
        if args.ephemeral and (args.detach or args.wait_timeout is not None):
            raise UsageError("--detach and --wait-timeout need a durable instance (not --ephemeral)")
        data = read_input(args.input)
        events = read_events(args.event)
        watcher = watcher_for(args, ephemeral=args.ephemeral)
        options = runtime_options(args, ephemeral=args.ephemeral, watcher=watcher)
    except XFlowError as error:
        print(f"xflow run: {error}", file=sys.stderr)
        return output.USAGE
    from contextlib import nullcontext

    # A durable instance gets its id here, so an interrupted run can say how to resume it.
    instance_id = args.instance_id or (None if args.ephemeral else str(uuid.uuid4()))
    resumable = None if args.ephemeral else instance_id
    following = follow_options(args)
    try:
        with _scripted_llm(args.llm_script) if args.llm_script else nullcontext():
            return guarded(lambda: _run(Path(args.file), data, events, instance_id, options, watcher, following,
                                        identity={"tenant": args.tenant, "user": args.user}),
                           resumable=resumable, as_json=args.json, wait_timeout=args.wait_timeout)
    except XFlowError as error:  # an unreadable or malformed reply script
        print(f"xflow run: {error}", file=sys.stderr)
        return output.USAGE


def _scripted_llm(path: str) -> Any:
    from xflow_runtime.llm.scripted import scripted_llm

    return scripted_llm(path)


async def _run(path: Path, data: Any, events: list[dict[str, Any]], instance_id: str | None,
               options: dict[str, Any], watcher: WaitWatcher, following: FollowOptions, *,
               identity: dict[str, Any]) -> Any:
    from xflow_runtime.runtime import Runtime, definition_cache

    async with Runtime(**options) as runtime:
        with definition_cache.enabled_from_environment():  # a document run before is not checked again
            plan = runtime.load(path)
        watcher.plan = plan
        handle = await runtime.start(plan, data, instance_id=instance_id, **identity)
        for event in events:
            await handle.send_event(event)
        return await follow(handle, watcher, following, durable=options["engine"] == "durable")


def guarded(run: Callable[[], Any], *, resumable: str | None = None, as_json: bool = False,
            wait_timeout: float | None = None) -> int:
    """Run a coroutine factory, print its output as JSON, and map errors to exit codes.
    ``resumable``: the id of the durable instance being run, named if the run is interrupted."""
    try:
        result = asyncio.run(run())
    except KeyboardInterrupt:
        hint = f"; the instance continues with: xflow resume {resumable}" if resumable else ""
        print(f"interrupted{hint}", file=sys.stderr)
        return output.INTERRUPTED
    except StoppedFollowing as stopped:
        return report_stopped(stopped, as_json=as_json, wait_timeout=wait_timeout)
    except DefinitionError as error:
        print(str(error), file=sys.stderr)
        return output.USAGE
    except WorkflowFailed as failure:
        output.error(str(failure))
        details = {k: v for k, v in (failure.error or {}).items() if v is not None and k != "message"}
        if details:
            print(f"  {json.dumps(details, default=str)}", file=sys.stderr)
        return output.FAILED
    except XFlowError as error:
        output.error(str(error))
        return output.FAILED
    output.print_json(result)
    return output.OK


# --- option values ----------------------------------------------------------------------------------

def read_input(spec: str | None) -> Any:
    if spec is None:
        return {}
    if spec == "-":
        return _parse_json(sys.stdin.read(), "the input on stdin")
    if spec.startswith("@"):
        return _parse_json(_read_file(spec[1:], "input"), f"input file {spec[1:]}")
    return _parse_json(spec, "--input")


def read_events(specs: list[str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for spec in specs:
        if spec.startswith("@"):
            text = _read_file(spec[1:], "events")
            for number, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    events.append(_event(_parse_json(line, f"{spec[1:]}:{number}"), f"{spec[1:]}:{number}"))
        else:
            events.append(_event(_parse_json(spec, "--event"), "--event"))
    return events


def _event(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise UsageError(f"{where}: an event must be a CloudEvent object with a string 'type'")
    return value


def read_secrets(pairs: list[str], secrets_file: str | None) -> dict[str, Any]:
    secrets: dict[str, Any] = {}
    if secrets_file:
        from xflow_runtime.cli.secrets_file import SecretsFileError, read_secrets_file

        try:
            secrets.update(read_secrets_file(secrets_file))
        except SecretsFileError as error:
            raise UsageError(str(error)) from None
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--secret expects NAME=VALUE, got {name.strip() or pair!r}")
        secrets[name.strip()] = value
    return secrets


def _read_file(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"cannot read {what} file {path}: {error.strerror}") from None


def _parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"{where} is not valid JSON: {error.msg} at line {error.lineno} "
                         f"column {error.colno}") from None


# --- output sinks -----------------------------------------------------------------------------------

def event_writer(path: str | None) -> Callable[[dict[str, Any]], None]:
    """Writes each produced CloudEvent as one JSON line to ``path`` (appending) or stderr."""

    def write(event: dict[str, Any]) -> None:
        line = json.dumps(event, ensure_ascii=False, default=str)
        if path is None:
            print(line, file=sys.stderr, flush=True)
        else:
            with open(path, "a", encoding="utf-8") as sink:
                sink.write(line + "\n")

    return write


class ProgressPrinter:
    """Prints each state entered, with the time since the instance started, to a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.started: float | None = None

    def __call__(self, record: dict[str, Any]) -> None:
        if self.started is None:
            self.started = record["at"]
            if record.get("instance_id"):
                print(f"instance {record['instance_id']}", file=self.stream, flush=True)
        if record.get("event") in ("state_entered", "state_failed") and record.get("state"):
            mark = (output.paint("→", "green", self.stream) if record["event"] == records.STATE_ENTERED
                    else output.paint("✗", "red", self.stream))
            elapsed = record["at"] - self.started
            print(f"  {mark} {record.get('state')}  +{elapsed:.3f}s", file=self.stream, flush=True)

