"""Following a running instance from the CLI: its output, or where it waits.

``run``, ``resume`` and ``send`` all end the same way: wait for the instance's result, printing
what it waits for when it settles in a waiting state (:class:`~xflow_runtime.cli.waiting.WaitWatcher`).
``--detach`` returns as soon as the instance waits (or ends); ``--wait-timeout S`` gives up after
``S`` seconds with exit code 3 — a durable instance is left PENDING in its store and continues
when what it waits for is delivered with ``xflow send`` (which then runs it) or with ``xflow resume``.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from xflow_runtime.cli import output
from xflow_runtime.cli.waiting import Wait, WaitWatcher, delivery_commands, notice
from xflow_runtime.errors import XFlowError


class StoppedFollowing(XFlowError):
    """The CLI stopped following a durable instance that goes on waiting (``--detach``,
    ``--wait-timeout``)."""

    def __init__(self, instance_id: str, wait: Wait | None, *, detached: bool, options: Sequence[str]):
        super().__init__(f"instance {instance_id} is waiting")
        self.instance_id, self.wait, self.detached, self.options = instance_id, wait, detached, options


@dataclass(frozen=True)
class FollowOptions:
    detach: bool = False
    wait_timeout: float | None = None
    #: the options a later ``xflow send``/``resume`` needs to run the instance the same way
    reproduce: tuple[str, ...] = ()


def add_follow_options(parser: argparse.ArgumentParser, *, detach: bool = True) -> None:
    if detach:
        parser.add_argument("--detach", action="store_true",
                            help="return as soon as the instance waits (or ends): print its id and "
                                 "what it waits for, exit 0; it keeps waiting durably")
    parser.add_argument("--wait-timeout", metavar="SECONDS", type=_seconds, default=None,
                        help="stop following after SECONDS: exit 3 if the instance has not ended "
                             "(it keeps waiting durably; deliver with xflow send)")


def follow_options(args: argparse.Namespace) -> FollowOptions:
    return FollowOptions(detach=bool(getattr(args, "detach", False)), wait_timeout=args.wait_timeout,
                         reproduce=tuple(reproducible_options(args)))


def reproducible_options(args: argparse.Namespace) -> list[str]:
    """The options of this command line that resuming the instance needs again. Secret values
    given inline are never printed: they appear as ``NAME=…`` for the user to fill in."""
    found: list[str] = []
    for flag, name in (("--db", "db"), ("--secrets-file", "secrets_file"), ("--llm-script", "llm_script"),
                       ("--embedding-model", "embedding_model")):
        value = getattr(args, name, None)
        if value:
            found += [flag, value]
    for workflow in getattr(args, "workflows", None) or ():
        found += ["--workflow", workflow]
    for pair in getattr(args, "secret", None) or ():
        found += ["--secret", pair.partition("=")[0] + "=…"]
    return found


def watcher_for(args: argparse.Namespace, *, ephemeral: bool, attached: bool = True) -> WaitWatcher:
    return WaitWatcher(plan=None, stream=sys.stderr, attached=attached, ephemeral=ephemeral,
                       options=tuple(reproducible_options(args)), quiet=bool(getattr(args, "quiet", False)))


def fan_out(*listeners: Callable[[dict[str, Any]], None] | None) -> Callable[[dict[str, Any]], None]:
    chosen = [listener for listener in listeners if listener is not None]

    def listen(record: dict[str, Any]) -> None:
        for listener in chosen:
            listener(record)

    return listen


async def follow(handle: Any, watcher: WaitWatcher, options: FollowOptions, *, durable: bool) -> Any:
    """The instance's output; raises :class:`StoppedFollowing` on ``--detach`` once it waits, or
    when ``--wait-timeout`` passes."""
    loop = asyncio.get_running_loop()
    waiting = asyncio.Event()

    def woken(wait: Wait) -> None:
        loop.call_soon_threadsafe(waiting.set)

    watcher.on_wait = woken
    result = asyncio.ensure_future(handle.result())
    waits = asyncio.ensure_future(waiting.wait()) if options.detach else None
    try:
        pending = {result} | ({waits} if waits else set())
        done, _ = await asyncio.wait(pending, timeout=options.wait_timeout, return_when=asyncio.FIRST_COMPLETED)
        if result in done:
            return result.result()
        if not durable:  # pragma: no cover - the command line refuses these options with --ephemeral
            raise XFlowError("an ephemeral instance cannot be left waiting")
        watcher.quiet = True  # the final notice says it all
        raise StoppedFollowing(handle.instance_id, watcher.current, detached=waits in done,
                               options=options.reproduce)
    finally:
        watcher.stop()
        for task in (result, waits):
            if task is not None and not task.done():
                task.cancel()


def report_stopped(stopped: StoppedFollowing, *, as_json: bool, wait_timeout: float | None) -> int:
    """Print where the instance was left; exit 0 when detached, 3 after ``--wait-timeout``."""
    wait, instance_id = stopped.wait, stopped.instance_id
    commands = (delivery_commands(wait, instance_id, attached=False, options=stopped.options) if wait
                else [shlex.join(["xflow", "resume", instance_id, *stopped.options])])
    code = output.OK if stopped.detached else output.STILL_WAITING
    if as_json:
        output.print_json({"instance_id": instance_id, "status": "WAITING" if wait else "PENDING",
                           "waiting_for": wait.to_dict() if wait else None, "deliver": commands})
    elif stopped.detached:
        output.write_out(instance_id + "\n")
    if not stopped.detached:
        state = "still waiting" if wait else "still running"
        print(f"{state} after {wait_timeout:g}s; instance {instance_id} keeps waiting durably "
              f"(exit {code})", file=sys.stderr)
    if wait is not None:
        for line in notice(wait, instance_id, attached=False, options=stopped.options, stream=sys.stderr):
            print(line, file=sys.stderr)
    else:
        print(f"  continue it with:\n    {commands[0]}", file=sys.stderr)
    return code


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value
