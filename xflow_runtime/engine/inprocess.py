"""The in-process engine: the port with no persistence, plus ``run_workflow`` for tests and the CLI.

Stable API (the conformance suite depends on it)::

    result = await run_workflow(plan, input, functions={"name": callable}, events=[cloudevent, ...],
                                secrets={...}, workflows=[other_plan, ...], virtual_time=True)
    result.status       # "completed" | "failed"
    result.output       # the last state's filtered output (any JSON value)
    result.error        # {"name", "code", "status", "message", "state"?} when failed
    result.produced_events  # CloudEvents produced by the instance, in order

``events`` are CloudEvents (dicts with ``type``, ``source``, ``data`` and extension attributes)
delivered in order before the instance starts; each state that waits takes the first matching one
still undelivered (a start event state consumes the first matching event). With
``virtual_time=True`` (the default) the instance runs on a :class:`VirtualClockLoop` in a worker
thread: sleeps, retry back-off and timeouts take no real time, and an instance that can never make
progress fails with the error code ``stalled`` instead of hanging. Callables registered in
``functions`` then run on that loop (plain functions, or coroutines that do not share objects
bound to the caller's loop). ``run_workflow_sync`` is the same for synchronous callers.
"""

from __future__ import annotations

import asyncio
import collections
import time
import uuid
from typing import Any, Awaitable, Callable, Iterable, Mapping, TypeVar

from xflow_runtime.error_codes import STALLED
from xflow_runtime.engine.clock import VirtualClockLoop
from xflow_runtime.interpreter.context import EventSink, ExecutionContext, FunctionInvoker, Observer, WorkflowRegistry
from xflow_runtime.interpreter.services import InstanceServices
from xflow_runtime.interpreter.events import EVENT_TOPIC
from xflow_runtime.interpreter.execute import ExecutionResult, execute
from xflow_runtime.plan.states import WorkflowPlan

T = TypeVar("T")


class InProcessEngine:
    """Implements :class:`~xflow_runtime.engine.port.EnginePort` directly on the running loop."""

    def __init__(self, *, epoch: float | None = None):
        self._epoch = time.time() if epoch is None else epoch
        self._start: float | None = None
        self._mailboxes: dict[str, collections.deque[Any]] = {}
        self._waiters: dict[str, collections.deque[asyncio.Future[Any]]] = {}

    async def run_step(self, name: str, effect: Callable[[], Awaitable[T]]) -> T:
        loop = asyncio.get_running_loop()
        if isinstance(loop, VirtualClockLoop):
            with loop.busy():
                return await effect()
        return await effect()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    async def wait_event(self, topic: str, timeout: float | None) -> Any | None:
        mailbox = self._mailboxes.get(topic)
        if mailbox:
            return mailbox.popleft()
        if timeout is not None and timeout <= 0:
            return None
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(topic, collections.deque()).append(waiter)
        try:
            if timeout is None:
                return await waiter
            return await asyncio.wait_for(asyncio.shield(waiter), timeout)
        except asyncio.TimeoutError:
            return None
        finally:
            if not waiter.done():
                waiter.cancel()
            queue = self._waiters.get(topic)
            if queue and waiter in queue:
                queue.remove(waiter)

    async def now(self) -> float:
        loop = asyncio.get_running_loop()
        if self._start is None:
            self._start = loop.time()
        return self._epoch + (loop.time() - self._start)

    async def new_id(self) -> str:
        return str(uuid.uuid4())

    def send(self, topic: str, message: Any) -> None:
        """Deliver ``message`` on ``topic`` (call from the engine's loop thread)."""
        waiters = self._waiters.get(topic)
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(message)
                return
        self._mailboxes.setdefault(topic, collections.deque()).append(message)

    def send_event(self, event: Mapping[str, Any]) -> None:
        """Deliver a CloudEvent to the instance."""
        self.send(EVENT_TOPIC, dict(event))


async def run_workflow(plan: WorkflowPlan, input: Any = None, *,
                       functions: Mapping[str, Callable[..., Any]] | None = None,
                       events: Iterable[Mapping[str, Any]] = (),
                       secrets: Mapping[str, Any] | None = None,
                       workflows: WorkflowRegistry | Mapping[Any, WorkflowPlan] | Iterable[WorkflowPlan] | None = None,
                       virtual_time: bool = True,
                       invoker: FunctionInvoker | None = None,
                       observer: Observer | None = None,
                       event_sink: EventSink | None = None,
                       services: "InstanceServices | Mapping[str, Any] | None" = None) -> ExecutionResult:
    """Run one instance of ``plan`` in process and return how it ended (never raises for a
    workflow failure: look at ``result.status`` / ``result.error``)."""
    arguments: dict[str, Any] = dict(functions=functions, events=list(events), secrets=secrets, workflows=workflows,
                     invoker=invoker, observer=observer, event_sink=event_sink, services=services)
    if not virtual_time or isinstance(asyncio.get_running_loop(), VirtualClockLoop):
        return await _run(plan, input, **arguments)
    return await asyncio.to_thread(_run_on_virtual_loop, plan, input, arguments)


def run_workflow_sync(plan: WorkflowPlan, input: Any = None, *, virtual_time: bool = True,
                      **arguments: Any) -> ExecutionResult:
    """:func:`run_workflow` for synchronous callers (the CLI)."""
    if virtual_time:
        return _run_on_virtual_loop(plan, input, arguments)
    return asyncio.run(_run(plan, input, **arguments))


def _run_on_virtual_loop(plan: WorkflowPlan, input: Any, arguments: dict[str, Any]) -> ExecutionResult:
    loop = VirtualClockLoop()
    try:
        main = loop.create_task(_run(plan, input, **arguments))
        stalled: list[bool] = []

        def stall() -> None:
            if not main.done() and not stalled:
                stalled.append(True)
                main.cancel()

        loop.on_stall = stall
        try:
            return loop.run_until_complete(main)
        except asyncio.CancelledError:
            if not stalled:
                raise
            message = ("the workflow can never make progress: it waits for an event or input that was "
                       "not delivered, with no timeout pending")
            return ExecutionResult("failed", None, {"name": STALLED, "code": STALLED, "status": None,
                                                     "message": message})
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


async def _run(plan: WorkflowPlan, input: Any, *, functions: Mapping[str, Callable[..., Any]] | None = None,
               events: Iterable[Mapping[str, Any]] = (), secrets: Mapping[str, Any] | None = None,
               workflows: Any = None, invoker: FunctionInvoker | None = None, observer: Observer | None = None,
               event_sink: EventSink | None = None,
               services: "InstanceServices | Mapping[str, Any] | None" = None) -> ExecutionResult:
    engine = InProcessEngine()
    for event in events:
        engine.send_event(event)
    context = ExecutionContext(functions=dict(functions or {}), invoker=invoker, secrets=dict(secrets or {}),
                               workflows=WorkflowRegistry.of(workflows), event_sink=event_sink,
                               observer=observer, services=InstanceServices.of(services))
    owned_function_context = None
    if context.invoker is None:
        context.invoker, owned_function_context = _default_invoker(context, plan)
    try:
        result = await execute(plan, input, port=engine, context=context)
        # Fire-and-forget calls and continuing subflows finish before the run is reported.
        while context.detached:
            pending, context.detached = context.detached, []
            await asyncio.gather(*pending, return_exceptions=True)
        return result
    finally:
        if context.services.mcp.value is not None:  # no MCP connection outlives its instance
            from xflow_runtime.mcp.connections import close_instance_connections

            await close_instance_connections(context.services)
        if owned_function_context is not None:
            await owned_function_context.aclose()


def _default_invoker(context: ExecutionContext, plan: WorkflowPlan) -> tuple[FunctionInvoker | None, Any]:
    """``xflow_runtime.functions.invoke_function`` with a fresh FunctionContext, when available."""
    try:
        from xflow_runtime.functions import FunctionContext, invoke_function
    except ImportError:  # the functions package is optional for the interpreter
        return None, None
    function_context = FunctionContext(secrets=context.secrets, constants=plan.constants)

    async def invoker(function: Any, arguments: Any, *, selection_set: str | None) -> Any:
        return await invoke_function(function, arguments, selection_set=selection_set, context=function_context)

    return invoker, function_context
