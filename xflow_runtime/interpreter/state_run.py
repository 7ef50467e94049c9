"""What a state handler may use of its instance: the one seam between the interpreter and the
state types beyond SW 0.8 (``aiagent``, ``usertask``, … in :mod:`xflow_runtime.state_types`).

A handler is ``async def handler(state, data, run: StateRun, scope) -> (data, exit)``. ``run`` is
the :class:`~xflow_runtime.interpreter.instance.Instance`, seen through this protocol: its port,
its variables, who it runs for (``services.identity``), its history, running actions and
subflows, producing and receiving events, typed services and a typed per-instance cache. Nothing
else of the instance is a handler's business, so the interpreter may change anything else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import Mapping

    from xflow_runtime.engine.port import EnginePort
    from xflow_runtime.interpreter.context import FunctionInvoker
    from xflow_runtime.interpreter.events import Inbox
    from xflow_runtime.interpreter.records import RecordKind
    from xflow_runtime.interpreter.services import InstanceServices
    from xflow_runtime.plan.model import Action, EventDef, SubFlowRef, Timeouts
    from xflow_runtime.plan.states import WorkflowPlan
    from xflow_runtime.telemetry.spans import Telemetry

T = TypeVar("T")


class CacheKey(Generic[T]):
    """A typed slot of an instance's cache (:meth:`StateRun.cached`). Keys compare by identity:
    declare each once, at module level, e.g. ``CONVERSATIONS: CacheKey[Store] = CacheKey("…")``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"CacheKey({self.name!r})"


class StateRun(Protocol):
    """One running instance, as a state handler sees it."""

    @property
    def port(self) -> EnginePort:
        """The engine port: every effect (a step, a sleep, an id, the time) goes through it."""
        ...

    @property
    def variables(self) -> dict[str, Any]:
        """The variables expressions see (``$CONST``, ``$SECRETS``, ``$WORKFLOW``, …)."""
        ...

    @property
    def instance_id(self) -> str: ...

    @property
    def plan(self) -> WorkflowPlan:
        """The compiled definition the instance runs (read only): its functions, MCP servers, …"""
        ...

    @property
    def secrets(self) -> Mapping[str, Any]:
        """The values behind ``$SECRETS`` (for an effect that needs one, e.g. a server's token)."""
        ...

    @property
    def function_invoker(self) -> FunctionInvoker | None:
        """The runtime's invoker of non-Python functions (REST, GraphQL, A2A …), for a state type
        that calls one with arguments of its own making; ``invoke`` is the usual way."""
        ...

    @property
    def telemetry(self) -> Telemetry | None:
        """The instance's OpenTelemetry spans (``None``: tracing is off)."""
        ...

    @property
    def workflow_id(self) -> str: ...

    @property
    def root(self) -> StateRun:
        """The top-level instance (itself unless this is a subflow): what its subflows share."""
        ...

    @property
    def services(self) -> InstanceServices:
        """Who the instance runs for (``identity``), its LLM client, memories and task store."""
        ...

    @property
    def inbox(self) -> Inbox:
        """Events sent to the instance (``await run.inbox.receive(definitions, timeout, {})``)."""
        ...

    def record(self, kind: RecordKind, /, **fields: Any) -> None:
        """Add a record to the instance's history (kinds: :mod:`xflow_runtime.interpreter.records`)."""
        ...

    async def run_actions(self, actions: tuple[Action, ...], data: Any, mode: str, scope: str,
                          timeouts: Timeouts) -> Any: ...

    async def invoke(self, action: Action, arguments: Any, step: str) -> Any:
        """One attempt of one action's call (a function, a subflow or an event), its raw result."""
        ...

    async def run_subflow(self, ref: SubFlowRef, data: Any, step: str) -> Any: ...

    async def emit(self, definition: EventDef, data: Any, attributes: Any, step: str) -> None: ...

    def cached(self, key: CacheKey[T], make: Callable[[], T]) -> T:
        """The instance's value for ``key``, made by ``make()`` on first use."""
        ...
