"""Replaying a recovered instance: every engine call takes the operation number it had.

DBOS numbers a workflow's operations in the order they *start* and checks, on replay, that the
operation at each number has the recorded name. Concurrent tasks (parallel branches, foreach
iterations, a timer racing work) start operations in an order that depends on timing, which a
replay does not repeat. So every engine call is named after the scope it runs in and its place in
that scope (``<name> @<scope path>#<n>``, see :mod:`.scopes`), which is the same in every run, and
while an instance replays each call waits until the next number is the one recorded under its name.

What the recording says, besides the names of completed operations (:class:`Recording`):

- who *drew* a number whose operation never completed: a timer's wait (the number after its clock
  reading), the two numbers ``DBOS.recv`` draws (after our ``xflow.receive`` marker), and the
  numbers of calls cancelled in flight when a race was decided (an ``xflow.cancelled`` marker);
- which calls were cancelled in flight ("doomed": on replay they wait to be cancelled again);
- how races were decided (``xflow.outcome``, see ``interpreter/concurrency.py``).

A number is then claimed by its recorded call, performed as a history flush by whichever call
meets it (flushes are interchangeable), or left unused once the scope that drew it has ended (its
task will never ask for it). Only a number in flight when the process died has no owner; a call
that is not recorded may take it. Beyond the last recorded number nothing waits.

The operation counter is read from DBOS's workflow context (``dbos._context``), read-only.
"""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from dbos import DBOS

from xflow_runtime.engine.scopes import Scope
from xflow_runtime.errors import XFlowError

#: Names of the operations the durable port draws (effects use the interpreter's step names).
HISTORY_STEP = "xflow.history"
TIMER_CLOCK = "xflow.timer"
TIMER_WAIT = "xflow.sleep"
RECEIVE = "xflow.receive"
CANCELLED = "xflow.cancelled"
OUTCOME = "xflow.outcome"
DBOS_RECV = "DBOS.recv"
DBOS_SLEEP = "DBOS.sleep"

_SEPARATOR = " @"


def call_name(base: str, path: str, number: int | str) -> str:
    return f"{base}{_SEPARATOR}{path}#{number}"


def parse_call_name(name: str) -> tuple[str, str, str] | None:
    """``(base, scope path, number)`` of a name made by :func:`call_name`."""
    base, separator, where = name.rpartition(_SEPARATOR)
    if not separator or "#" not in where:
        return None
    path, _, number = where.rpartition("#")
    return base, path, number


@dataclass(frozen=True)
class Call:
    """One engine call: its base name and its place (scope path, number in the scope)."""

    base: str
    path: str
    number: int

    @property
    def name(self) -> str:
        return call_name(self.base, self.path, self.number)

    def named(self, base: str) -> str:
        return call_name(base, self.path, self.number)


@dataclass
class Recording:
    """What an earlier run of the instance recorded, indexed for replay."""

    names: dict[int, str] = field(default_factory=dict)
    owners: dict[int, str] = field(default_factory=dict)
    numbers: dict[str, int] = field(default_factory=dict)
    doomed: set[tuple[str, int]] = field(default_factory=set)
    #: Numbers drawn by calls cancelled in flight: a replay never draws them again.
    dead: set[int] = field(default_factory=set)
    outcomes: dict[str, str] = field(default_factory=dict)

    @property
    def last(self) -> int:
        return max(self.names, default=-1)

    @classmethod
    def of(cls, steps: dict[int, str]) -> "Recording":
        recording = cls(names=dict(steps))
        for number, name in sorted(steps.items()):
            recording.numbers.setdefault(name, number)
            parsed = parse_call_name(name)
            if parsed is None:
                continue
            base, path, place = parsed
            recording.owners[number] = path
            if base == TIMER_CLOCK:  # the timer's wait was drawn with its clock reading
                recording.owners[number + 1] = path
            elif base.startswith(RECEIVE):  # DBOS.recv draws two numbers right after the marker
                recording.owners[number + 1] = recording.owners[number + 2] = path
            elif base.startswith(CANCELLED + ":"):
                _, drawn, cancelled = base.split(":")
                for value in drawn.split(","):
                    recording.owners[int(value)] = path
                    recording.dead.add(int(value))
                if cancelled != "-":
                    recording.doomed.add((path, int(cancelled)))
            elif base.startswith(OUTCOME + ":"):
                recording.outcomes[f"{path}#{place}"] = base[len(OUTCOME) + 1:]
        return recording


class Move(enum.Enum):
    TAKE = "take"      # draw the next number for this call
    FLUSH = "flush"    # perform the recorded history flush at the next number, then look again
    SKIP = "skip"      # leave the next number unused: its owner has ended
    WAIT = "wait"      # another call owns the next number
    BLOCK = "block"    # this call was cancelled in flight: wait to be cancelled again


def next_move(recording: Recording, head: int, call_name_: str, call: Call | None,
              ended: Callable[[str], bool]) -> Move:
    """What a call named ``call_name_`` does when the next operation number is ``head``.

    Pure: the replay rules in one place (``tests/engine/durable/test_replay_rules.py``)."""
    if call is not None and (call.path, call.number) in recording.doomed:
        return Move.BLOCK
    if head > recording.last:
        return Move.TAKE
    recorded = recording.names.get(head)
    if recorded == call_name_:
        return Move.TAKE
    if recorded == HISTORY_STEP:
        return Move.FLUSH
    if head in recording.dead:
        return Move.SKIP
    owner = recording.owners.get(head)
    if owner is not None:
        return Move.SKIP if ended(owner) else Move.WAIT
    if recorded is not None or call_name_ in recording.numbers:
        return Move.WAIT  # a number of DBOS's own, or this call has its own number further on
    # A number in flight when the process died: a call that is not recorded may take it, if the
    # numbers it draws along with it are free too.
    return Move.TAKE if _fits(recording, head, call_name_) else Move.WAIT


def _fits(recording: Recording, head: int, name: str) -> bool:
    parsed = parse_call_name(name)
    base = parsed[0] if parsed else name
    if base == TIMER_CLOCK:
        companions: tuple[tuple[str | None, ...], ...] = ((None,),)
    elif base.startswith(RECEIVE):  # DBOS.recv, then its timeout's DBOS.sleep
        companions = ((None, DBOS_RECV), (None, DBOS_SLEEP))
    else:  # one number; not one of a receive whose marker was lost
        return not any(recording.names.get(head + offset) in (DBOS_RECV, DBOS_SLEEP) for offset in (1, 2))
    for offset, allowed in enumerate(companions, start=1):
        number = head + offset
        if number > recording.last:
            return True
        if number in recording.owners or recording.names.get(number) not in allowed:
            return False
    return True


class ReplayDiverged(XFlowError):
    """A recovered instance asks for operations its recording does not have at that point."""


# Recorded (pickled) as an instance's error: named by the package, the public path.
ReplayDiverged.__module__ = "xflow_runtime.engine.durable"


class ReplayOrder:
    """The replay of one instance: loads its recording once, then orders its calls."""

    POLL_SECONDS = 0.02
    #: How long a number nobody owns may wait for a call that is not recorded before it is left
    #: unused (only numbers in flight when the process died have no owner).
    UNOWNED_GRACE_SECONDS = 0.5
    #: How long the next number may stay unclaimed while calls wait before we give up.
    STALL_SECONDS = 30.0

    def __init__(self, instance_id: str, workflow_context: Any, root: Scope | None = None) -> None:
        self.instance_id = instance_id
        self._context = workflow_context
        self._root = root
        self.recording: Recording | None = None
        self._loading: "asyncio.Future[dict[int, str]] | None" = None
        self._changed: "asyncio.Future[None] | None" = None
        if root is not None:
            root.on_change(self.notify)

    async def load(self) -> None:
        """Read what an earlier run recorded (once, at this run's first engine call)."""
        if self.recording is not None or self._context is None:
            return
        if self._loading is None:
            self._loading = asyncio.ensure_future(self._read_recording())
        steps = await asyncio.shield(self._loading)
        if self.recording is None:
            self.recording = Recording.of(steps)

    async def _read_recording(self) -> dict[int, str]:
        # Called from workflow code, DBOS would record the listing itself as an operation (and
        # replay that stale answer later). ``run_in_executor``, unlike ``to_thread``, does not
        # carry the workflow's context along, so the listing runs as a plain query.
        instance_id = self.instance_id

        def read() -> dict[int, str]:
            steps = DBOS.list_workflow_steps(instance_id, load_output=False)
            return {step["function_id"]: step["function_name"] for step in steps}

        return await asyncio.get_running_loop().run_in_executor(None, read)

    def head(self) -> int:
        """The number the next operation will get."""
        return int(self._context.function_id) + 1

    @property
    def replaying(self) -> bool:
        return self.recording is not None and self.head() <= self.recording.last

    def expected(self) -> str | None:
        """The recorded name of the next operation, while replaying."""
        return self.recording.names.get(self.head()) if self.recording is not None and self.replaying else None

    def is_recorded(self, number: int) -> bool:
        return self.recording is not None and number in self.recording.names

    def outcome(self, key: str) -> str | None:
        return self.recording.outcomes.get(key) if self.recording is not None else None

    def notify(self) -> None:
        """The counter moved or a scope ended: waiting calls look again."""
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)

    def skip(self) -> None:
        DBOS.reserve_step()
        self.notify()

    async def turn(self, name: str, call: Call | None, flush: Callable[[], Awaitable[None]]) -> None:
        """Return when the next operation number is the one to draw for ``name``. Recorded history
        flushes met on the way are performed with ``flush``."""
        await self.load()
        recording = self.recording
        if recording is None:
            return
        ended = self._root.has_ended if self._root is not None else (lambda path: False)
        loop = asyncio.get_running_loop()
        position, since = -1, loop.time()
        while True:
            head = self.head()
            move = next_move(recording, head, name, call, ended)
            if move is Move.TAKE:
                return
            if move is Move.FLUSH:
                await flush()
                continue
            if move is Move.SKIP:
                self.skip()
                continue
            if move is Move.BLOCK:  # cancelled soon, as it was the first time
                try:
                    await asyncio.wait_for(loop.create_future(), self.STALL_SECONDS)
                except asyncio.TimeoutError:
                    raise ReplayDiverged(f"instance {self.instance_id} cannot be replayed: {name} was "
                                         "cancelled by a decided race the first time, and is not now") from None
            if head != position:
                position, since = head, loop.time()
            waited = loop.time() - since
            if (waited > self.UNOWNED_GRACE_SECONDS and head not in recording.names
                    and head not in recording.owners):
                self.skip()  # in flight at a crash, and no call of this run wants it
                continue
            if waited > self.STALL_SECONDS:
                raise ReplayDiverged(
                    f"instance {self.instance_id} cannot be replayed: operation {head} was recorded as "
                    f"{recording.names.get(head) or 'an unfinished operation'} and nothing asks for it "
                    f"(waiting: {name})")
            if self._changed is None or self._changed.done():
                self._changed = loop.create_future()
            try:
                await asyncio.wait_for(asyncio.shield(self._changed), self.POLL_SECONDS)
            except asyncio.TimeoutError:
                pass

    async def caught_up(self) -> None:
        """Return once every operation recorded by the earlier run has been drawn again."""
        await self.load()
        while self.recording is not None and self.head() <= self.recording.last:
            await asyncio.sleep(self.POLL_SECONDS)
