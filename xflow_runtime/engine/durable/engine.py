"""The durable engine: DBOS Transact launched for a host, and instances as DBOS workflows.

The port each instance runs on is :class:`~.port.DurablePort` (every effect a DBOS
step, durable timers and receives). An instance is one DBOS workflow whose id is the instance id, so an instance killed at any point resumes from its last
completed step, and its timers and pending events survive restarts.

We write no checkpointing or scheduling of our own: DBOS owns the system database (a SQLite file
by default, PostgreSQL by URL, same code path). What we add is the mapping (see
``specs/durability.md``):

- one registered async workflow function, :func:`_instance_workflow`, that hands the recorded
  request to the *host* (the :class:`~xflow_runtime.runtime.Runtime` that owns this process) —
  async, so a waiting instance holds no thread;
- a pinned application version (:data:`APPLICATION_VERSION`), so upgrading xflow-runtime does not
  orphan running instances (DBOS otherwise hashes the source of the workflow functions);
- every record is JSON (:mod:`.serializer`), never pickle; steps canonicalize their results and
  errors, so a replay sees the same values and raises the same error the first run did;
- timers that replay the way they ran (they record that they fired, see ``DurablePort.sleep``);
- replays in the recorded order, so concurrent branches recover too (:mod:`.replay`).

Importing this module imports DBOS: only the durable paths import it.
"""

from __future__ import annotations

import builtins
import asyncio
import logging
import os
import weakref
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from dbos import DBOS, DBOSConfig, SetWorkflowAttributes, SetWorkflowID
from dbos._error import DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded, DBOSException
from dbos._context import get_local_dbos_context  # read-only: the workflow's operation counter

from xflow_runtime._logging import CurrentStderrHandler
from xflow_runtime.engine.durable.names import (
    APPLICATION_VERSION,
    EVENT_ENVELOPE_KEY,
    MAX_RECOVERY_ATTEMPTS,
    WORKFLOW_NAME,
    parked_error,
)
from xflow_runtime.engine.durable.completions import CompletionWatch
from xflow_runtime.engine.durable.instance_keys import instance_attributes
from xflow_runtime.engine.durable.local_wake import poll_seconds, wake_receiver
from xflow_runtime.engine.durable import wakes  # also registers the write-then-wake workflow before launch
from xflow_runtime.engine.durable.port import DurablePort
from xflow_runtime.engine.durable.progress import instances_made_progress
from xflow_runtime.engine.durable.replay import ReplayOrder
from xflow_runtime.engine.scopes import enter_root
from xflow_runtime.engine.serializer import SERIALIZER, refuse_pickle
from xflow_runtime.errors import WorkflowFailed, XFlowError

if TYPE_CHECKING:
    from xflow_runtime.engine.durable.instance_index import IndexedInstances
    from xflow_runtime.engine.durable.instance_keys import InstanceCounts, InstanceQuery
    from xflow_runtime.engine.fleet_options import FleetOptions

#: Called inside the DBOS workflow with the recorded request and the port; returns the output.
InstanceBody = Callable[[dict[str, Any], "DurablePort"], Awaitable[Any]]

_body: InstanceBody | None = None

#: How often DBOS's ``get_result`` re-reads a status: only for an instance that ended (read once)
#: or runs in this process (its task answers); others wait in :mod:`.completions`.
RESULT_POLLING_SECONDS = 0.02


#: DBOS's executor threads (``$XFLOW_DBOS_EXECUTOR_THREADS``): the threads that run DBOS's SQL and
#: our ``to_thread`` calls. Our workflows are async and sync functions have threads of their own,
#: so no executor thread waits for long; a few times the pool's connections keep it busy.
EXECUTOR_THREADS = 64


class DurableEngineError(XFlowError):
    """The durable engine cannot start, or an instance id is unknown."""


# Recorded (pickled) errors name the package, the public path, not this module.
DurableEngineError.__module__ = "xflow_runtime.engine.durable"


@DBOS.workflow(name=WORKFLOW_NAME, max_recovery_attempts=MAX_RECOVERY_ATTEMPTS)
async def _instance_workflow(request: dict[str, Any]) -> Any:
    if _body is None:
        raise DurableEngineError("no xflow runtime is attached to the durable engine in this process")
    instance_id = DBOS.workflow_id
    assert instance_id is not None
    root = enter_root()
    order = ReplayOrder(instance_id, get_local_dbos_context(), root)
    task = asyncio.current_task()
    if task is not None:
        _running[task] = instance_id
    return await _body(request, DurablePort(instance_id, order=order))


#: The instances running in this process (their DBOS workflow tasks → instance ids), stopped
#: before DBOS is.
_running: "weakref.WeakKeyDictionary[asyncio.Task[Any], str]" = weakref.WeakKeyDictionary()


def _started_tasks() -> set["asyncio.Task[Any]"]:
    """DBOS's own tasks for the workflows it started, including any whose function has not begun
    yet (a runtime closed right after ``start()``). Read from a DBOS internal, read-only; without
    it, only instances already running are stopped."""
    try:
        from dbos._dbos import _get_dbos_instance

        return set(getattr(_get_dbos_instance(), "_workflow_tasks", ()))
    except Exception:  # noqa: BLE001 - DBOS not launched, or its internals changed
        return set()


async def stop_running_instances() -> None:
    """Cancel the instances this process runs and wait until they have stopped. They stay
    PENDING in the store (a cancellation is not an outcome: DBOS records none), to be resumed by
    the next process; stopping them here lets them unwind while DBOS is still open, instead of
    being collected half-way through a DBOS call after it shut down."""
    loop = asyncio.get_running_loop()  # DBOS runs instances recovered at launch on a loop of its own
    tasks = [task for task in set(_running) | _started_tasks()
             if not task.done() and task.get_loop() is loop and task is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)
        # A clean stop is no crash: these dispatches do not count towards parking them.
        await instances_made_progress(_running[task] for task in tasks if task in _running)


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
    if not any(isinstance(h, CurrentStderrHandler) for h in dbos_logger.handlers):
        handler = CurrentStderrHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s [%(levelname)8s] dbos: %(message)s", "%H:%M:%S"))
        dbos_logger.addHandler(handler)
        dbos_logger.propagate = False


def resolve_database_url(url: str | None) -> str:
    """The system database URL by the one rule of :func:`xflow_runtime.settings.locate` (``url``,
    else ``$XFLOW_DATABASE_URL``, else SQLite under ``./.xflow/``); a SQLite file's directory is
    created here."""
    from xflow_runtime.settings import locate, sqlite_path

    url = locate(url).durable_url
    path = sqlite_path(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    elif not url.startswith(("postgresql", "sqlite")):
        raise DurableEngineError(f"unsupported database URL {_redact(url)!r}: use sqlite:///FILE or postgresql://…")
    return url


def _redact(url: str) -> str:
    """A URL safe to print: the password replaced."""
    from xflow_runtime.settings import redact

    return redact(url)


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
                 application_version: str = APPLICATION_VERSION, fleet: "FleetOptions | None" = None) -> None:
        self.database_url = resolve_database_url(database_url)
        self.executor_id = executor_id
        self.application_version = application_version
        #: Part of a worker fleet: starts go through the instance queue (specs/deployment.md).
        self.fleet = fleet
        self._member: Any = None
        self._launched = False
        # DBOS's handles on the instances this process started and that are still running: their
        # result is the task's, awaited directly instead of polling the status row.
        self._running_handles: dict[str, Any] = {}
        self._indexed: "IndexedInstances | None" = None  # lists and event delivery
        self._completions = CompletionWatch()

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
            # SQLite has no push: messages of this process wake their receiver directly, the
            # listener's polling only catches other processes' (:mod:`.local_wake`).
            "notification_listener_polling_interval_sec": poll_seconds(self.database_url),
            # Every record is JSON; rows marked as pickle are refused, never unpickled.
            "serializer": SERIALIZER,
            # DBOS's executor is also the loop's default one (every ``to_thread`` of its SQL and
            # ours) and unbounded by default: 10,000 conversations starting at once on one worker
            # made ~10,000 threads, each waiting for one of the pool's connections until its 30 s
            # timeout failed the instance. Bounded, the calls wait in the executor's queue instead.
            "max_executor_threads": int(os.environ.get("XFLOW_DBOS_EXECUTOR_THREADS", str(EXECUTOR_THREADS))),
        }
        if self.database_url.startswith("postgresql"):
            # No ping before every checkout (DBOS's default): it was a round trip per transaction,
            # ~14 per agent instance, ~1 ms of PostgreSQL's CPU and more of ours. DBOS retries
            # every system-database call on a lost connection (and SQLAlchemy then replaces the
            # pool's connections), so a restarted server costs one retry, not an error
            # (specs/durability.md §7; tests/fleet/test_dbos_contract.py, test_database_faults.py).
            config["db_engine_kwargs"] = {"pool_pre_ping": False}
        if self.fleet is not None:
            # a frozen worker must not hold a status-row lock (and block its takeover) for long
            config["sys_db_idle_transaction_timeout_sec"] = 10
            # DBOS's transactions are short: 10 connections serve hundreds of instances, and a fleet
            # of N processes needs N pools from one max_connections (specs/deployment.md §6)
            config["sys_db_pool_size"] = int(os.environ.get("XFLOW_DBOS_POOL_SIZE", "10"))
        refuse_pickle()
        attach_log_handler()
        try:
            if self.fleet is not None and self.fleet.run_instances:
                self._join_fleet()  # before launch: the row exists before anything is claimed
            # the tick workflows, in every process: any process on the database that runs queued
            # work (not a front end) may dequeue a tick
            import xflow_runtime.engine.index_schedule  # noqa: F401
            import xflow_runtime.engine.schedules  # noqa: F401
            DBOS(config=config)
            if self.fleet is not None and not self.fleet.run_instances:
                DBOS.listen_queues([])  # a front end: starts instances, runs none
            DBOS.launch()
            if self.fleet is not None:
                from xflow_runtime.engine.fleet import register_instance_queue

                register_instance_queue(self.fleet)
            from xflow_runtime.engine.durable.instance_index import IndexedInstances

            self._indexed = IndexedInstances.open(self.database_url)
        except Exception as error:
            DBOS.destroy()
            if self._member is not None:
                self._member.leave("exited")
                self._member = None
            if isinstance(error, XFlowError):
                raise
            raise DurableEngineError(
                f"cannot open the durable store {_redact(self.database_url)}: {describe_error(error)}") from error
        self._launched = True

    def _join_fleet(self) -> None:
        from xflow_runtime.engine.fleet import Fleet, open_fleet_database

        assert self.fleet is not None
        member = Fleet(open_fleet_database(self.database_url, self.fleet.times), self.executor_id,
                       self.application_version, self.fleet.times)
        member.join()
        self._member = member

    def llm_limiter(self) -> Any:
        """The fleet's LLM rate limiter (``fleet.llm_rate_limits``), or None."""
        if self._member is None or not self.fleet or not self.fleet.llm_rate_limits:
            return None
        from xflow_runtime.engine.rate_limit import FleetRateLimiter, RateLimit

        return FleetRateLimiter(self._member.engine, [RateLimit.parse(t) for t in self.fleet.llm_rate_limits])

    def drain(self, timeout: float) -> bool:
        """A fleet worker stops starting effects and waits up to ``timeout`` s for those in flight."""
        return self._member.drain(timeout) if self._member is not None else True

    def shutdown(self) -> None:
        global _body
        if self._launched:
            DBOS.destroy()
            _body = None
            self._launched = False
        if self._indexed is not None:
            self._indexed.close()
            self._indexed = None
        if self._member is not None:  # after DBOS stopped: nothing of ours commits any more
            member, self._member = self._member, None
            member.leave("exited")
            member.engine.dispose()

    async def start(self, instance_id: str, request: dict[str, Any]) -> None:
        """Start an instance; starting again with the same id attaches to the existing one. An
        instance of a user is labelled with the user's subject key, so erasure and export find it
        without decoding recorded inputs (specs/memory-longterm.md, privacy)."""
        with SetWorkflowID(instance_id), SetWorkflowAttributes(instance_attributes(request)):
            if self.fleet is not None:  # any worker of the fleet runs it
                from xflow_runtime.engine.fleet import INSTANCE_QUEUE

                handle = await DBOS.enqueue_workflow_async(INSTANCE_QUEUE, _instance_workflow, request)
            else:
                handle = await DBOS.start_workflow_async(_instance_workflow, request)
        task = getattr(handle, "task", None)
        if isinstance(task, asyncio.Future) and not task.done():
            handles = self._running_handles
            handles[instance_id] = handle
            task.add_done_callback(lambda _: handles.pop(instance_id, None))

    async def result(self, instance_id: str) -> Any:
        """The output of an instance once it ended; :class:`~.completions.UnknownWorkflow` if none has this id."""
        try:
            handle = self._running_handles.get(instance_id)
            if handle is None:  # it runs elsewhere (a fleet worker) or ran before this process
                await self._completions.wait(instance_id)  # one poll for every waiting caller
                handle = await DBOS.retrieve_workflow_async(instance_id, existing_workflow=False)
            # Ended (a remote one) or a task of this process: no status polling left here.
            return await handle.get_result(polling_interval_sec=RESULT_POLLING_SECONDS)
        except DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded:
            raise WorkflowFailed(instance_id, parked_error()) from None
        except DBOSException as error:  # cancelled, a replay that diverged
            raise DurableEngineError(f"instance {instance_id}: {error}") from error

    async def send(self, instance_id: str, topic: str, payload: Any,
                   idempotency_key: str | None = None) -> None:
        await DBOS.send_async(instance_id, {EVENT_ENVELOPE_KEY: payload}, topic,
                              idempotency_key=idempotency_key)
        wake_receiver(instance_id, topic)  # committed: a receive waiting in this process reads it now

    async def write_then_wake(self, kind: str, arguments: dict[str, Any], *,
                              instance_id: str | None = None) -> dict[str, Any]:
        """A write of ours and the wake-ups it asks for, as one recoverable DBOS workflow about
        ``instance_id`` (:mod:`.wakes`)."""
        return await wakes.write_then_wake(kind, arguments, instance_id=instance_id)

    async def cancel(self, instance_id: str) -> None:
        await DBOS.cancel_workflow_async(instance_id)

    async def resume(self, instance_id: str) -> None:
        await DBOS.resume_workflow_async(instance_id)

    async def status(self, instance_id: str) -> Any | None:
        return await DBOS.get_workflow_status_async(instance_id)

    async def list(self, *, status: str | list[str] | None = None, limit: int | None = None) -> list[Any]:
        """Instances, newest first."""
        return await DBOS.list_workflows_async(name=WORKFLOW_NAME, status=status, limit=limit,
                                               sort_desc=True)

    async def page(self, query: "InstanceQuery") -> builtins.list[Any]:
        """One page of instances (DBOS statuses), newest first, by an indexed query."""
        assert self._indexed is not None
        return await self._indexed.page(query)

    async def recipients(self, tenant: str, user: str | None, keys: builtins.list[str]) -> builtins.list[Any]:
        """The live instances of a tenant (of a user) whose correlation key is one of ``keys``."""
        assert self._indexed is not None
        return await self._indexed.recipients(tenant, user, keys)

    async def counts(self, ids: builtins.list[str]) -> "InstanceCounts":
        """Every instance counted by status, and the status of each of ``ids``, by aggregate queries."""
        assert self._indexed is not None
        return await self._indexed.counts(ids)

    async def steps(self, instance_id: str) -> builtins.list[Any]:
        return await DBOS.list_workflow_steps_async(instance_id)

    async def history(self, instance_id: str) -> builtins.list[dict[str, Any]]:
        """The history records written so far (does not wait for more)."""
        from xflow_runtime.engine.durable.history import read_history

        return await read_history(instance_id)
