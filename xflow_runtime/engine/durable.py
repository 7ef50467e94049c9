"""The durable engine: the engine port on DBOS Transact.

Every effect is a DBOS step (its result or exception is checkpointed), a sleep is a recorded
wake-up time plus a step recorded when the timer fires, and waiting for an event is a durable
``recv`` with a timeout. An instance is one DBOS
workflow whose id is the instance id, so an instance killed at any point resumes from its last
completed step, and its timers and pending events survive restarts.

We write no checkpointing or scheduling of our own: DBOS owns the system database (a SQLite file
by default, PostgreSQL by URL, same code path). What we add is the mapping (see
``specs/durability.md``):

- one registered async workflow function, :func:`_instance_workflow`, that hands the recorded
  request to the *host* (the :class:`~xflow_runtime.runtime.Runtime` that owns this process) —
  async, so a waiting instance holds no thread;
- a pinned application version (:data:`APPLICATION_VERSION`), so upgrading xflow-runtime does not
  orphan running instances (DBOS otherwise hashes the source of the workflow functions);
- exceptions raised by effects are made picklable before DBOS records them, so a replay raises the
  same error the first run did;
- timers that replay the way they ran (they record that they fired, see :meth:`DurablePort.sleep`);
- replays in the recorded order, so concurrent branches recover too (:mod:`.durable_replay`).

Importing this module imports DBOS: only the durable paths import it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import sys
import time
import uuid
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, TypeVar

from dbos import DBOS, DBOSConfig, SetWorkflowID
from dbos._error import DBOSException
from dbos._context import get_local_dbos_context  # read-only: the workflow's operation counter

from xflow_runtime.engine.durable_names import (
    APPLICATION_VERSION,
    DEFAULT_DATABASE_URL,
    EVENT_ENVELOPE_KEY,
    HISTORY_STREAM,
    WORKFLOW_NAME,
    FOREVER_SECONDS,
)
from xflow_runtime.engine.durable_replay import (
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
from xflow_runtime.engine.scopes import current_scope, enter_root
from xflow_runtime.errors import WorkflowError, XFlowError

if TYPE_CHECKING:
    from xflow_runtime.history import HistoryBuffer

T = TypeVar("T")

#: Called inside the DBOS workflow with the recorded request and the port; returns the output.
InstanceBody = Callable[[dict[str, Any], "DurablePort"], Awaitable[Any]]

_body: InstanceBody | None = None

#: Pending history records that make the next effect flush them first (one write per batch).
HISTORY_BATCH = 32

#: How often a caller waiting for an instance's result re-reads its status.
RESULT_POLLING_SECONDS = 0.02


class DurableEngineError(XFlowError):
    """The durable engine cannot start, or an instance id is unknown."""


class DurablePort:
    """The engine port inside one running DBOS workflow (one instance).

    Every call is named after its scope (:mod:`.scopes`) and first takes its turn in the recorded
    order (:class:`ReplayOrder`: a no-op unless the instance is replaying after a restart), then
    draws the DBOS operation numbers it needs. A call cancelled in flight because a race was
    decided leaves a marker naming the numbers it drew, so a replay knows they were drawn (and by
    whom) although nothing completed at them.

    ``history`` (the interpreter's observer buffer) is stored as batches, each written by a step
    named ``xflow.history``: before the instance blocks (sleep, event wait), at its end, and before
    an effect once :data:`HISTORY_BATCH` records are pending. A replay performs the recorded
    flushes (skipped by DBOS: they wrote then) and no others, so it never stores a batch twice;
    records not stored before a crash are reported again by the replay and stored then.
    """

    def __init__(self, instance_id: str, history: "HistoryBuffer | None" = None,
                 order: ReplayOrder | None = None) -> None:
        self.instance_id = instance_id
        self.history = history
        self.order = order or ReplayOrder(instance_id, None)

    async def run_step(self, name: str, effect: Callable[[], Awaitable[T]]) -> T:
        call = _call(name)
        await self._take_turn(call)
        slot = self._reserve()

        async def step() -> T:
            try:
                return await effect()
            except Exception as error:  # recorded by DBOS, so it must survive pickling
                raise _picklable(error) from None

        try:
            return await slot.run_async({"name": call.name}, step)
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
        await timer_slot.run_async({"name": call.named(TIMER_WAIT)}, wait_until_wake)

    async def wait_event(self, topic: str, timeout: float | None) -> Any | None:
        call = _call(f"{RECEIVE}:{topic}")
        await self._take_turn(call, blocking=True)
        # The marker names the two numbers DBOS.recv draws right after it (nothing runs between
        # reserving it and calling recv); it is written alongside the wait.
        marker = self._reserve()
        written = asyncio.ensure_future(marker.run_async({"name": call.name}, _nothing))
        # Messages are wrapped in an envelope so a ``null`` payload is told apart from a timeout.
        seconds = FOREVER_SECONDS if timeout is None else max(float(timeout), 0.0)
        receiving = DBOS.recv_async(topic, timeout_seconds=seconds)
        try:
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
        if message is None:
            return None
        return message[EVENT_ENVELOPE_KEY]

    async def now(self) -> float:
        call = _call("xflow.now")
        await self._take_turn(call)
        return await self._reserve().run_async({"name": call.name}, _read_clock)

    async def new_id(self) -> str:
        call = _call("xflow.new_id")
        await self._take_turn(call)
        return await self._reserve().run_async({"name": call.name}, _draw_id)

    async def recorded_outcome(self, key: str) -> str | None:
        await self.order.load()
        return self.order.outcome(key)

    async def record_outcome(self, key: str, outcome: str) -> None:
        path, _, number = key.rpartition("#")
        name = call_name(f"{OUTCOME}:{outcome}", path, number)
        await self._take_turn_named(name, None)
        await self._reserve().run_async({"name": name}, _nothing)

    async def flush(self) -> None:
        """Store the pending history records (at the end of the instance)."""
        await self._take_turn(None, blocking=True, flush_only=True)

    def _reserve(self) -> Any:
        slot = DBOS.reserve_step()
        self.order.notify()
        return slot

    async def _take_turn(self, call: Call | None, *, blocking: bool = False, flush_only: bool = False) -> None:
        order = self.order
        await order.load()
        if not order.replaying:
            pending = self.history.pending if self.history is not None else 0
            if pending >= HISTORY_BATCH or (blocking and pending):
                await self._store_history()
            if flush_only:
                return
        elif flush_only:
            while order.expected() == HISTORY_STEP:
                await self._store_history()
            return
        assert call is not None
        await order.turn(call.name, call, self._store_history)

    async def _take_turn_named(self, name: str, call: Call | None) -> None:
        await self.order.load()
        await self.order.turn(name, call, self._store_history)

    async def _store_history(self) -> None:
        batch = self.history.drain() if self.history is not None else []

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


@DBOS.workflow(name=WORKFLOW_NAME)
async def _instance_workflow(request: dict[str, Any]) -> Any:
    if _body is None:
        raise DurableEngineError("no xflow runtime is attached to the durable engine in this process")
    instance_id = DBOS.workflow_id
    assert instance_id is not None
    root = enter_root()
    order = ReplayOrder(instance_id, get_local_dbos_context(), root)
    task = asyncio.current_task()
    if task is not None:
        _running.add(task)
    return await _body(request, DurablePort(instance_id, order=order))


#: The instances running in this process (their DBOS workflow tasks), stopped before DBOS is.
_running: "weakref.WeakSet[asyncio.Task[Any]]" = weakref.WeakSet()


async def stop_running_instances() -> None:
    """Cancel the instances this process runs and wait until they have stopped. They stay
    PENDING in the store (a cancellation is not an outcome: DBOS records none), to be resumed by
    the next process; stopping them here lets them unwind while DBOS is still open, instead of
    being collected half-way through a DBOS call after it shut down."""
    loop = asyncio.get_running_loop()  # DBOS runs instances recovered at launch on a loop of its own
    tasks = [task for task in _running
             if not task.done() and task.get_loop() is loop and task is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


async def _read_clock() -> float:
    return time.time()


async def _draw_id() -> str:
    return str(uuid.uuid4())


def _picklable(error: Exception) -> Exception:
    """``error`` if it survives a pickle round trip, else an equivalent :class:`WorkflowError`
    (DBOS records step exceptions with pickle; the first run and the replay must raise alike)."""
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:
        return WorkflowError(str(error), code=type(error).__name__,
                             name=getattr(error, "name", None) if isinstance(getattr(error, "name", None), str) else None)


class _CurrentStderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record is logged. DBOS's own console handler
    keeps the stream of the moment it was created, which breaks once an embedder (or a test
    harness) swaps and closes that stream."""

    def __init__(self) -> None:
        super().__init__()

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def describe_error(error: BaseException) -> str:
    """A database error in one or two lines: the driver's message, without SQLAlchemy's
    statement dump and "background" link."""
    original = getattr(error, "orig", None) or error
    return " ".join(str(original).split("\n(Background")[0].split())


def attach_log_handler() -> None:
    """Give DBOS's logger our handler before DBOS adds its own (it only adds one to a logger
    that has none), at our level: DBOS's messages duplicate the errors we report."""
    dbos_logger = logging.getLogger("dbos")
    dbos_logger.setLevel(os.environ.get("XFLOW_DBOS_LOG_LEVEL", "CRITICAL"))
    if not any(isinstance(h, _CurrentStderrHandler) for h in dbos_logger.handlers):
        handler = _CurrentStderrHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s [%(levelname)8s] dbos: %(message)s", "%H:%M:%S"))
        dbos_logger.addHandler(handler)
        dbos_logger.propagate = False


def sqlite_url(directory: str | os.PathLike[str] = ".xflow") -> str:
    path = Path(directory).resolve() / "xflow.sqlite"
    return f"sqlite:///{path}"


def resolve_database_url(url: str | None) -> str:
    """The system database URL: ``url``, else ``$XFLOW_DATABASE_URL``, else SQLite under
    ``./.xflow/``. A ``postgres://`` URL is accepted as a spelling of ``postgresql://``."""
    url = url or os.environ.get("XFLOW_DATABASE_URL") or DEFAULT_DATABASE_URL
    if url == DEFAULT_DATABASE_URL:
        url = sqlite_url()
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://"):]
    if url.startswith("sqlite:///"):
        Path(url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    elif not url.startswith(("postgresql", "sqlite")):
        raise DurableEngineError(f"unsupported database URL {_redact(url)!r}: use sqlite:///FILE or postgresql://…")
    return url


def _redact(url: str) -> str:
    """A URL safe to print: the password replaced."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        credentials, host = rest.rsplit("@", 1)
        user = credentials.split(":", 1)[0]
        return f"{scheme}://{user}:***@{host}"
    return url


class DurableEngine:
    """DBOS, launched once per process, running instances for one host body.

    DBOS is a process-wide singleton, so there is at most one launched durable engine per
    process. ``executor_id`` decides which crashed instances this process recovers at launch:
    DBOS recovers the PENDING workflows of its own executor id. A long-running service keeps the
    default ``"local"`` (so a restart picks its instances up); short-lived CLI processes use a
    unique id and resume instances explicitly (``xflow resume``), so two concurrent CLI runs never
    recover each other's live instances.
    """

    def __init__(self, database_url: str | None = None, *, executor_id: str = "local",
                 application_version: str = APPLICATION_VERSION) -> None:
        self.database_url = resolve_database_url(database_url)
        self.executor_id = executor_id
        self.application_version = application_version
        self._launched = False

    @property
    def display_url(self) -> str:
        """The database URL without its password, for messages."""
        return _redact(self.database_url)

    def launch(self, body: InstanceBody) -> None:
        global _body
        if self._launched:
            return
        _body = body
        config: DBOSConfig = {
            "name": "xflow",
            "system_database_url": self.database_url,
            "application_version": self.application_version,
            "executor_id": self.executor_id,
            # DBOS logs failed workflows with tracebacks; ours are reported as clean errors instead.
            "log_level": os.environ.get("XFLOW_DBOS_LOG_LEVEL", "CRITICAL"),
            "notification_listener_polling_interval_sec": 0.05,
        }
        attach_log_handler()
        try:
            DBOS(config=config)
            DBOS.launch()
        except Exception as error:
            DBOS.destroy()
            raise DurableEngineError(
                f"cannot open the durable store {_redact(self.database_url)}: {describe_error(error)}") from error
        self._launched = True

    def shutdown(self) -> None:
        global _body
        if self._launched:
            DBOS.destroy()
            _body = None
            self._launched = False

    async def start(self, instance_id: str, request: dict[str, Any]) -> None:
        """Start an instance; starting again with the same id attaches to the existing one."""
        with SetWorkflowID(instance_id):
            await DBOS.start_workflow_async(_instance_workflow, request)

    async def result(self, instance_id: str) -> Any:
        try:
            handle = await DBOS.retrieve_workflow_async(instance_id)
            # Polls the status row; a short interval keeps the latency of small instances low.
            return await handle.get_result(polling_interval_sec=RESULT_POLLING_SECONDS)
        except DBOSException as error:  # cancelled, too many recoveries, a replay that diverged
            raise DurableEngineError(f"instance {instance_id}: {error}") from error

    async def send(self, instance_id: str, topic: str, payload: Any,
                   idempotency_key: str | None = None) -> None:
        await DBOS.send_async(instance_id, {EVENT_ENVELOPE_KEY: payload}, topic,
                              idempotency_key=idempotency_key)

    async def resume(self, instance_id: str) -> None:
        await DBOS.resume_workflow_async(instance_id)

    async def status(self, instance_id: str) -> Any | None:
        return await DBOS.get_workflow_status_async(instance_id)

    async def list(self, *, status: str | None = None, limit: int | None = None) -> list[Any]:
        """Instances, newest first."""
        return await DBOS.list_workflows_async(name=WORKFLOW_NAME, status=status, limit=limit,
                                               sort_desc=True)

    async def steps(self, instance_id: str) -> list[Any]:
        return await DBOS.list_workflow_steps_async(instance_id)

    async def history(self, instance_id: str) -> list[dict[str, Any]]:
        """The history records written so far (does not wait for more)."""
        from xflow_runtime.engine.durable_history import read_history

        return await read_history(instance_id)
