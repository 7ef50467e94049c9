"""The engine port inside one running DBOS workflow (one durable instance).

Every effect is a DBOS step (its result or exception is checkpointed), a sleep is a recorded
wake-up time plus a step recorded when the timer fires, and waiting for an event is a durable
``recv`` with a timeout. Each call is named after its scope (:mod:`..scopes`) and takes its turn
in the recorded order while the instance replays (:mod:`.replay`). The DBOS lifecycle
(launch, start, recovery) is :mod:`.engine`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import TYPE_CHECKING, Any, Awaitable, Callable, TypeVar, cast

from dbos import DBOS

from xflow_runtime.engine.durable import local_wake
from xflow_runtime.engine.durable.names import EVENT_ENVELOPE_KEY, FOREVER_SECONDS, HISTORY_STREAM
from xflow_runtime.engine.durable.progress import instances_made_progress
from xflow_runtime.engine.durable.replay import (
    CANCELLED,
    HISTORY_STEP,
    OUTCOME,
    RECEIVE,
    TIMER_CLOCK,
    TIMER_WAIT,
    Call,
    ReplayOrder,
    call_name,
)
from xflow_runtime.engine import fleet
from xflow_runtime.engine.scopes import current_scope
from xflow_runtime.engine.serializer import canonical_error, canonical_result

if TYPE_CHECKING:
    from xflow_runtime.history import HistoryBuffer

T = TypeVar("T")

#: Pending history records that make the next effect flush them first (one write per batch),
#: once :data:`HISTORY_FLUSH_SECONDS` have passed since the last flush…
HISTORY_BATCH = 32
#: …so a busy instance writes its history about once a second, not every few effects (a flush
#: is a step plus a stream row: at 32 records it was an eighth of the writes of a loop of effects).
HISTORY_FLUSH_SECONDS = 1.0
#: Pending records that make the next effect flush them however recent the last flush was.
HISTORY_BATCH_MAX = 1000


class DurablePort:
    """The engine port inside one running DBOS workflow (one instance).

    Every call is named after its scope (:mod:`..scopes`) and first takes its turn in the recorded
    order (:class:`ReplayOrder`: a no-op unless the instance is replaying after a restart), then
    draws the DBOS operation numbers it needs. A call cancelled in flight because a race was
    decided leaves a marker naming the numbers it drew, so a replay knows they were drawn (and by
    whom) although nothing completed at them.

    ``history`` (the interpreter's observer buffer) is stored as batches, each written by a step
    named ``xflow.history``: before the instance blocks (a sleep; an event wait's receive marker
    stores the batch itself, :meth:`wait_event`), at its end, and before
    an effect once :data:`HISTORY_BATCH` records are pending and the last flush is
    :data:`HISTORY_FLUSH_SECONDS` old (or :data:`HISTORY_BATCH_MAX` are pending). A replay performs the recorded
    flushes (skipped by DBOS: they wrote then) and no others, so it never stores a batch twice;
    records not stored before a crash are reported again by the replay and stored then.
    """

    def __init__(self, instance_id: str, history: "HistoryBuffer | None" = None,
                 order: ReplayOrder | None = None) -> None:
        self.instance_id = instance_id
        self.history = history
        self.order = order or ReplayOrder(instance_id, None)
        self._flushed_at = time.monotonic()
        self._progress_noted: "asyncio.Future[None] | None" = None

    async def run_step(self, name: str, effect: Callable[[], Awaitable[T]]) -> T:
        member = fleet.active()
        if member is None:
            return await self._run_step(name, effect)
        await member.before_effect()  # a fleet worker: not while draining, not on a stale lease
        try:
            return await self._run_step(name, effect)
        finally:
            member.after_effect()

    async def _run_step(self, name: str, effect: Callable[[], Awaitable[T]]) -> T:
        call = _call(name)
        await self._take_turn(call)
        slot = self._reserve()

        async def step() -> T:
            # What the first run sees is what a replay reads back from the JSON record.
            try:
                result: T = canonical_result(await effect())
                return result
            except Exception as error:
                raise canonical_error(error) from None

        try:
            return cast(T, await slot.run_async({"name": call.name}, step))  # a DBOS slot: untyped
        except asyncio.CancelledError:
            await self._note_cancelled(call, [slot.step_id])
            raise

    async def sleep(self, seconds: float) -> None:
        """A durable timer that records whether it *fired*.

        The wake-up time is a recorded clock reading plus ``seconds``; the waiting is a step
        recorded only when the timer fires. A recorded timer fires at once on replay (it fired
        then); an unrecorded one first waits until the replay has caught up with everything
        recorded (so work that won the race the first time wins it again), then for the rest of
        its time.
        """
        if seconds <= 0:
            return
        call = _call(TIMER_CLOCK)
        await self._take_turn(call, blocking=True)
        clock_slot, timer_slot = self._reserve(), self._reserve()
        order = self.order

        async def wait_until_wake() -> None:
            await order.caught_up()
            remaining = wake_at - time.time()
            if remaining > 0:
                await asyncio.sleep(remaining)

        try:
            wake_at = await clock_slot.run_async({"name": call.name}, _read_clock) + seconds
        except asyncio.CancelledError:
            await self._note_cancelled(call, [clock_slot.step_id, timer_slot.step_id])
            raise
        # Once the clock reading is recorded, it names the wait's number too: a cancelled wait
        # needs no marker (the common case: the work won).
        self._note_live_wait(timer_slot.step_id)
        await timer_slot.run_async({"name": call.named(TIMER_WAIT)}, wait_until_wake)

    async def wait_event(self, topic: str, timeout: float | None) -> Any | None:
        call = _call(f"{RECEIVE}:{topic}")
        await self._take_turn(call, history_in_marker=True)
        # The marker names the two numbers DBOS.recv draws right after it (nothing runs between
        # reserving it and calling recv); it is written alongside the wait, and it stores the
        # pending history (one step where a flush step and a marker were two): a recorded marker
        # stored them then, so on replay they are dropped like a recorded flush's.
        batch = self._drain_history()

        async def mark() -> None:
            if batch:  # from inside the step: DBOS keys it by instance + offset
                await DBOS.write_stream_async(HISTORY_STREAM, batch)

        marker = self._reserve()
        written = asyncio.ensure_future(marker.run_async({"name": call.name}, mark))
        self._note_live_wait(marker.step_id + 1, marker.step_id + 2)
        # Messages are wrapped in an envelope so a ``null`` payload is told apart from a timeout.
        seconds = FOREVER_SECONDS if timeout is None else max(float(timeout), 0.0)
        receiving = DBOS.recv_async(topic, timeout_seconds=seconds)
        try:
            with local_wake.receiving():
                message = await receiving
        except GeneratorExit:  # collected without finishing: nothing may be awaited
            raise
        except BaseException as error:  # cancelled, or DBOS aborts a cancelled instance
            with contextlib.suppress(asyncio.CancelledError):  # the first error is raised below
                await _settle(written)
            marker_lost = written.cancelled() or written.exception() is not None
            if isinstance(error, asyncio.CancelledError) and marker_lost:  # else the marker names them
                first = marker.step_id
                await self._note_cancelled(call, [first, first + 1, first + 2])
            raise
        await _settle(written)
        failure = None if written.cancelled() else written.exception()
        if failure is not None:
            raise failure  # the history could not be stored: as a failed flush did
        if message is None:
            return None
        return message[EVENT_ENVELOPE_KEY]

    async def now(self) -> float:
        call = _call("xflow.now")
        await self._take_turn(call)
        return float(await self._reserve().run_async({"name": call.name}, _read_clock))

    async def new_id(self) -> str:
        call = _call("xflow.new_id")
        await self._take_turn(call)
        return str(await self._reserve().run_async({"name": call.name}, _draw_id))

    async def recorded_outcome(self, key: str) -> str | None:
        await self.order.load()
        return self.order.outcome(key)

    async def record_outcome(self, key: str, outcome: str) -> None:
        path, _, number = key.rpartition("#")  # the group's own place: one outcome per group
        call = Call(f"{OUTCOME}:{outcome}", path, int(number))
        await self._take_turn(call)
        await self._reserve().run_async({"name": call.name}, _nothing)

    async def load_recording(self) -> bool:
        """Read what earlier executions of this instance recorded; True if they recorded anything
        (this execution resumes the instance)."""
        await self.order.load()
        recording = self.order.recording
        return recording is not None and recording.last >= 0

    @property
    def replaying(self) -> bool:
        """True while this execution is answered from the recording (read by tracing: a replayed
        step emits no span). False until the recording is loaded."""
        return self.order.replaying

    async def flush(self) -> None:
        """Store the pending history records (at the end of the instance)."""
        await self._take_turn(None, blocking=True, flush_only=True)

    def _note_live_wait(self, *numbers: int) -> None:
        """A wait at operation ``numbers`` that no earlier run completed: this dispatch survived
        its replay, so the instance is no poison pill (:mod:`.progress`). Once per run, in
        the background: nothing may be awaited between drawing a wait's numbers and waiting."""
        if self._progress_noted is not None or any(self.order.is_recorded(n) for n in numbers):
            return
        self._progress_noted = asyncio.ensure_future(instances_made_progress([self.instance_id]))

    def _reserve(self) -> Any:
        slot = DBOS.reserve_step()
        self.order.notify()
        return slot

    async def _take_turn(self, call: Call | None, *, blocking: bool = False, flush_only: bool = False,
                         history_in_marker: bool = False) -> None:
        """``blocking``: the call blocks, so pending history is stored first (a flush step);
        ``history_in_marker``: it blocks, and its own marker step stores the history."""
        order = self.order
        await order.load()
        if not order.replaying:
            pending = self.history.pending if self.history is not None else 0
            if (blocking and pending) or (not history_in_marker and self._history_due(pending)):
                await self._store_history()
            if flush_only:
                return
        elif flush_only:
            while order.expected() == HISTORY_STEP:
                await self._store_history()
            return
        assert call is not None
        await order.turn(call.name, call, self._store_history)

    def _history_due(self, pending: int) -> bool:
        """Live only: a replay performs the recorded flushes, whatever this policy says now."""
        if pending >= HISTORY_BATCH_MAX:
            return True
        return pending >= HISTORY_BATCH and time.monotonic() - self._flushed_at >= HISTORY_FLUSH_SECONDS

    def _drain_history(self) -> list[Any]:
        batch = self.history.drain() if self.history is not None else []
        self._flushed_at = time.monotonic()
        return batch

    async def _store_history(self) -> None:
        batch = self._drain_history()

        async def write() -> None:
            if batch:  # from inside the step: DBOS keys it by instance + offset
                await DBOS.write_stream_async(HISTORY_STREAM, batch)

        slot = self._reserve()
        try:
            await slot.run_async({"name": HISTORY_STEP}, write)
        except asyncio.CancelledError:
            await self._note_cancelled(None, [slot.step_id])
            raise

    async def _note_cancelled(self, call: Call | None, numbers: list[int]) -> None:
        """After a call was cancelled in flight: if a decided race cancelled it (not a shutdown),
        and it drew numbers beyond the recording, write a marker naming them."""
        scope = current_scope()
        if not scope.cancelled_by_decision or self.order.replaying:
            return
        if all(self.order.is_recorded(number) for number in numbers):
            return
        place = "-" if call is None else str(call.number)
        drawn = ",".join(str(number) for number in numbers)
        name = call_name(f"{CANCELLED}:{drawn}:{place}", scope.path, scope.take())
        written = asyncio.ensure_future(self._reserve().run_async({"name": name}, _nothing))
        with contextlib.suppress(asyncio.CancelledError):  # the caller raises its cancellation
            await _settle(written)


def _call(base: str) -> Call:
    scope = current_scope()
    return Call(base, scope.path, scope.take())


async def _settle(task: "asyncio.Future[Any]") -> None:
    """Wait for ``task`` (it records something) even if the caller is cancelled meanwhile; the
    cancellation is raised once it is done."""
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
    if not task.cancelled():
        task.exception()  # retrieved: a failed marker write is not worth a warning at exit
    if cancelled:
        raise asyncio.CancelledError


async def _nothing() -> None:
    return None


async def _read_clock() -> float:
    return time.time()


async def _draw_id() -> str:
    return str(uuid.uuid4())
