"""One running workflow instance: the state loop, exits, ``onErrors``, compensation and subflows.

The loop per state (specs/semantics.md, "One state"): ``stateDataFilter.input`` → handler (under
``stateExecTimeout``) → ``stateDataFilter.output`` → exit. On a failure the first matching
``onErrors`` entry is taken with the state data as it was (no output filter). An exit then runs,
in order: compensation (``compensate: true``), ``produceEvents`` (on the resulting data), and the
next state or the end.
"""

from __future__ import annotations

import asyncio
import copy
import json
from typing import TYPE_CHECKING, Any, Callable, Coroutine, Mapping, TypeVar

from xflow_runtime.interpreter import records
from xflow_runtime.error_codes import SUBFLOW_NOT_FOUND, UNSUPPORTED_STATE
from xflow_runtime.engine.port import EnginePort
from xflow_runtime.expressions import PENDING
from xflow_runtime.engine.scopes import cancel_decided, start_tasks
from xflow_runtime.errors import ERROR_MESSAGE
from xflow_runtime.interpreter.actions import invoke, run_actions
from xflow_runtime.interpreter.concurrency import within
from xflow_runtime.interpreter.context import ExecutionContext, FunctionInvoker
from xflow_runtime.interpreter.events import Inbox, build_event
from xflow_runtime.interpreter.failures import Failure
from xflow_runtime.interpreter.records import RecordKind
from xflow_runtime.interpreter.registry import state_handler
from xflow_runtime.interpreter.services import InstanceServices
from xflow_runtime.interpreter.state_run import CacheKey
from xflow_runtime.plan.model import PLAIN_END, Action, End, EventDef, Exit, ProducedEvent, SubFlowRef, Timeouts
from xflow_runtime.plan.states import State, WorkflowPlan

if TYPE_CHECKING:
    from xflow_runtime.telemetry.spans import Telemetry


_NOTHING = object()
T = TypeVar("T")


class StopRequested(Exception):
    """Raised at a state boundary once a non-interrupting workflow timeout has expired."""


class Instance:
    """Mutable run-time state of one instance. Handlers receive it as ``run``; those of state types
    beyond SW 0.8 see it through :class:`~xflow_runtime.interpreter.state_run.StateRun`."""

    def __init__(self, plan: WorkflowPlan, port: EnginePort, context: ExecutionContext, instance_id: str,
                 *, inbox: Inbox | None = None, scope: str = "", parent: "Instance | None" = None):
        self.plan = plan
        self.port = port
        self.context = context
        self.instance_id = instance_id
        self.inbox = inbox or Inbox(port)
        self.scope = scope
        self.parent = parent
        self.correlation: dict[str, Any] = {}
        self.variables: dict[str, Any] = {
            "CONST": plan.constants,
            # Only the secrets the workflow declares are visible to its expressions.
            "SECRETS": {name: context.secrets[name] for name in plan.secrets if name in context.secrets},
            "WORKFLOW": {"id": plan.workflow_id, "name": plan.name, "version": plan.version,
                         "instanceId": instance_id},
        }
        self.compensable: list[State] = []
        self.produced: list[dict[str, Any]] = parent.produced if parent else []
        self.children: list[asyncio.Task[Any]] = []
        self.visits = 0
        self.data: Any = None  # the latest state data, for a workflow timeout's runBefore
        self.stop_requested = False  # set by workflowExecTimeout with interrupt: false
        #: State data reached by action sequences interrupted by a timeout, by step scope.
        self.progress: dict[str, Any] = {}
        self._observer = context.observer
        self._cache: dict[CacheKey[Any], Any] = {}

    # --- what a state handler sees (StateRun) -----------------------------------------------------
    @property
    def workflow_id(self) -> str:
        return self.plan.workflow_id

    @property
    def root(self) -> "Instance":
        run = self
        while run.parent is not None:
            run = run.parent
        return run

    @property
    def services(self) -> InstanceServices:
        return self.context.services

    @property
    def secrets(self) -> Mapping[str, Any]:
        return self.context.secrets

    @property
    def function_invoker(self) -> FunctionInvoker | None:
        return self.context.invoker

    @property
    def telemetry(self) -> Telemetry | None:
        telemetry: Telemetry | None = self.context.telemetry
        return telemetry

    def cached(self, key: CacheKey[T], make: Callable[[], T]) -> T:
        if key in self._cache:
            return self._cache[key]  # type: ignore[no-any-return]
        value = self._cache[key] = make()
        return value

    async def invoke(self, action: Action, arguments: Any, step: str) -> Any:
        return await invoke(self, action, arguments, step)

    # --- history ---------------------------------------------------------------------------------
    def record(self, kind: RecordKind, /, **fields: Any) -> None:
        if self._observer is not None:
            fields["event"] = kind
            fields["instance_id"] = self.instance_id
            self._observer(fields)

    # --- the state loop --------------------------------------------------------------------------
    async def run_states(self, name: str, data: Any, *, compensating: bool = False) -> tuple[Any, End]:
        """Run from state ``name`` until an end; returns the final data and the end taken."""
        states = self.plan.states
        while True:
            if self.stop_requested and not compensating:
                raise StopRequested()
            state = states[name]
            self.visits += 1
            data, exit = await self.run_state(state, data, f"{self.scope}{self.visits}:{state.name}")
            self.data = data
            if exit is None:  # a compensation state with neither transition nor end
                return data, PLAIN_END
            if exit.compensate and not compensating:
                data = await self.compensate(data)
            for produced in exit.produce_events:
                await self.produce(produced, data, f"{self.scope}{self.visits}:{state.name}")
            if isinstance(exit, End):
                return data, exit
            name = exit.next_state

    async def run_state(self, state: State, data: Any, scope: str) -> tuple[Any, Exit | None]:
        telemetry = self.context.telemetry
        if telemetry is None:
            return await self._run_state(state, data, scope)
        # A visit the engine replays from history is deferred: no span unless real work happens in it.
        with telemetry.state(state.name, state.type, scope, replaying=getattr(self.port, "replaying", False)):
            return await self._run_state(state, data, scope)

    async def _run_state(self, state: State, data: Any, scope: str) -> tuple[Any, Exit | None]:
        observed = self._observer is not None
        if observed:
            self.record(records.STATE_ENTERED, state=state.name, type=state.type, input=data)
        raw_input = data
        try:
            if state.filter.input is not None:
                value = state.filter.input.evaluate_now(data, self.variables)  # no coroutine when in-process
                data = await state.filter.input.evaluate_async(data, self.variables) if value is PENDING else value
            handler = state_handler(state.type)
            if handler is None:
                raise Failure(f"no handler for state type '{state.type}'", code=UNSUPPORTED_STATE)
            if state.timeouts.state_total is None:
                data, exit = await handler(state, data, self, scope)
            else:
                data, exit = await within(self.port, state.timeouts.state_total, handler(state, data, self, scope),
                                          f"state '{state.name}'")
            if exit is None:
                exit = state.exit
            if state.error_message is not None:
                _fail_with_error_message(state, data, self.variables)
            if state.filter.output is not None:
                value = state.filter.output.evaluate_now(data, self.variables)  # no coroutine when in-process
                data = await state.filter.output.evaluate_async(data, self.variables) if value is PENDING else value
        except Exception as exc:  # noqa: BLE001 - matched against onErrors below
            failure = Failure.from_exception(exc)
            if not failure.has_data and self.progress:
                reached = self._progress_of(scope)
                if reached is not _NOTHING:
                    failure.with_data(reached)
            failure.with_data(data if data is not None else raw_input)
            self.progress.clear()
            failure.state = failure.state or state.name
            exit = self._handler_for(state, failure)
            if observed:
                self.record(records.STATE_FAILED, state=state.name, error=failure.to_dict(), handled=exit is not None)
            if exit is None:
                raise failure from None
            if self.context.telemetry is not None:  # handled by onErrors: the visit's span says it failed
                self.context.telemetry.fail_current(failure.code or failure.name or "error")
            return failure.data, exit
        if state.compensated_by is not None:
            self.compensable.append(state)
        if observed:
            self.record(records.STATE_EXITED, state=state.name, output=data,
                        next=exit.next_state if exit is not None and not isinstance(exit, End) else None)
        return data, exit

    def _progress_of(self, scope: str) -> Any:
        """The data an interrupted action sequence of this state reached (not a branch's)."""
        if scope in self.progress:
            return self.progress[scope]
        for key in sorted(self.progress):
            if key.startswith(f"{scope}/e"):
                return self.progress[key]
        return _NOTHING

    def _handler_for(self, state: State, failure: Failure) -> Exit | None:
        for handler in state.on_errors:
            if failure.matches_any(handler.errors):
                return handler.exit
        return None

    # --- helpers for handlers --------------------------------------------------------------------
    async def run_actions(self, actions: tuple[Action, ...], data: Any, mode: str, scope: str,
                          timeouts: Timeouts) -> Any:
        return await run_actions(self, actions, data, mode, scope, timeouts)

    async def compensate(self, data: Any) -> Any:
        """Run the compensation chains of completed states, newest first, threading the data."""
        pending, self.compensable = self.compensable, []
        for state in reversed(pending):
            self.record(records.COMPENSATION_STARTED, state=state.name, by=state.compensated_by)
            data, _ = await self.run_states(state.compensated_by, data, compensating=True)  # type: ignore[arg-type]
        return data

    async def produce(self, produced: ProducedEvent, data: Any, scope: str) -> None:
        variables = self.variables
        payload = data if produced.data is None else await produced.data.render_async(data, variables)
        attributes = (None if produced.context_attributes is None
                      else await produced.context_attributes.render_async(data, variables))
        await self.emit(produced.event, payload, attributes, f"{scope}/produce:{produced.event.name}")

    async def emit(self, definition: EventDef, data: Any, attributes: Any, step: str) -> None:
        if isinstance(data, (dict, list)):  # the payload leaves the instance: never share state data
            data = copy.deepcopy(data)
        event = await build_event(self.port, definition, data, attributes, self.plan.workflow_id, self.correlation)
        self.produced.append(event)
        self.record(records.EVENT_PRODUCED, event_name=definition.name, type=definition.type, id=event["id"])
        sink = self.context.event_sink
        if sink is not None:
            await self.port.run_step(f"{step}:emit", lambda: _deliver(sink, event))

    def spawn(self, coroutine: Coroutine[Any, Any, Any], *, detached: bool = False) -> None:
        """Start fire-and-forget work; it is cancelled when the instance ends unless ``detached``."""
        _, (task,) = start_tasks([coroutine], ("async",))
        (self.context.detached if detached else self.children).append(task)

    async def run_subflow(self, ref: SubFlowRef, data: Any, step: str) -> Any:
        from xflow_runtime.interpreter.execute import run_instance

        plan = self.context.workflows.get(ref.workflow_id, ref.version)
        if plan is None and ref.workflow_id == self.plan.workflow_id and ref.version in (None, self.plan.version):
            plan = self.plan
        if plan is None:
            wanted = ref.workflow_id if ref.version is None else f"{ref.workflow_id} version {ref.version}"
            raise Failure(f"subflow '{wanted}' is not registered", code=SUBFLOW_NOT_FOUND)
        result = await run_instance(plan, data, port=self.port, context=self.context,
                                    instance_id=f"{self.instance_id}/{step}", inbox=self.inbox,
                                    scope=f"{step}/", parent=self)
        if result.status != "completed":
            error = result.error or {}
            raise Failure(f"subflow '{plan.workflow_id}' failed: {error.get('message')}", name=error.get("name"),
                          code=error.get("code"), status=error.get("status"), details=error)
        return result.output

    async def close(self) -> None:
        """Cancel unfinished async work started with ``onParentComplete: terminate``."""
        await cancel_decided(self.children)  # the instance's end decides it, in every run


async def _deliver(sink: Any, event: dict[str, Any]) -> None:
    result = sink(event)
    if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
        await result


def _fail_with_error_message(state: State, data: Any, variables: dict[str, Any]) -> None:
    """SonataFlow's ``metadata.errorMessage``: a non-null value fails the state with that message."""
    assert state.error_message is not None  # noqa: S101 - the caller checked
    message = state.error_message.evaluate(data, variables)
    if message is not None:
        text = message if isinstance(message, str) else json.dumps(message)
        raise Failure(text, code=ERROR_MESSAGE, name=ERROR_MESSAGE)
