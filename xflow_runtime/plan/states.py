"""Frozen state definitions, one class per state type, plus :class:`WorkflowPlan`.

Every state carries the common fields of :class:`State`; ``exit`` is its own ``transition`` or
``end`` (``None`` for switch states and compensation states that have neither).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from xflow_runtime.expressions import JqExpression
from xflow_runtime.plan.functions import FunctionDef
from xflow_runtime.plan.model import (
    NO_EVENT_FILTER,
    NO_STATE_FILTER,
    NO_TIMEOUTS,
    Action,
    EventDataFilter,
    EventDef,
    ErrorDef,
    Exit,
    OnError,
    RetryDef,
    StateDataFilter,
    Timeouts,
    WorkflowExecTimeout,
)
from xflow_runtime.plan.templates import Template

ActionMode = Literal["sequential", "parallel"]


@dataclass(frozen=True, kw_only=True)
class State:
    name: str
    type: str
    id: str | None = None
    filter: StateDataFilter = NO_STATE_FILTER
    on_errors: tuple[OnError, ...] = ()
    exit: Exit | None = None
    compensated_by: str | None = None
    used_for_compensation: bool = False
    timeouts: Timeouts = NO_TIMEOUTS
    metadata: dict[str, Any] = field(default_factory=dict)
    #: ``metadata.errorMessage`` (SonataFlow): evaluated on the state data after the state's work;
    #: a non-null result fails the state with that message (code ``errorMessage``).
    error_message: JqExpression | None = None


@dataclass(frozen=True, kw_only=True)
class OperationState(State):
    actions: tuple[Action, ...]
    action_mode: ActionMode = "sequential"


@dataclass(frozen=True, slots=True)
class DataCondition:
    condition: JqExpression
    exit: Exit
    name: str | None = None


@dataclass(frozen=True, slots=True)
class EventCondition:
    event: EventDef
    exit: Exit
    filter: EventDataFilter = NO_EVENT_FILTER
    name: str | None = None


@dataclass(frozen=True, kw_only=True)
class SwitchState(State):
    data_conditions: tuple[DataCondition, ...] = ()
    event_conditions: tuple[EventCondition, ...] = ()
    #: None: no condition matching fails the state with code ``NoConditionMatched`` (SonataFlow).
    default: Exit | None


@dataclass(frozen=True, kw_only=True)
class SleepState(State):
    duration: float


@dataclass(frozen=True, kw_only=True)
class InjectState(State):
    data: Any


@dataclass(frozen=True, slots=True)
class Branch:
    name: str
    actions: tuple[Action, ...]
    timeouts: Timeouts = NO_TIMEOUTS


@dataclass(frozen=True, kw_only=True)
class ParallelState(State):
    branches: tuple[Branch, ...]
    completion_type: Literal["allOf", "atLeast"] = "allOf"
    num_completed: int = 0  # only read with atLeast


@dataclass(frozen=True, kw_only=True)
class ForEachState(State):
    input_collection: JqExpression
    output_collection: JqExpression | None  # path mode
    iteration_param: str
    actions: tuple[Action, ...]
    batch_size: int | None = None
    mode: ActionMode = "parallel"


@dataclass(frozen=True, slots=True)
class OnEvents:
    events: tuple[EventDef, ...]
    actions: tuple[Action, ...] = ()
    action_mode: ActionMode = "sequential"
    filter: EventDataFilter = NO_EVENT_FILTER


@dataclass(frozen=True, kw_only=True)
class EventState(State):
    on_events: tuple[OnEvents, ...]
    exclusive: bool = True


@dataclass(frozen=True, kw_only=True)
class CallbackState(State):
    action: Action
    event: EventDef
    event_filter: EventDataFilter = NO_EVENT_FILTER


@dataclass(frozen=True, slots=True)
class DataInputSchema:
    schema: dict[str, Any]
    fail_on_validation_errors: bool = True
    validator: Any = field(default=None, compare=False, repr=False)  # a jsonschema validator


@dataclass(frozen=True, kw_only=True)
class WorkflowPlan:
    """A compiled workflow. ``states`` keeps definition order; ``start`` names the first state."""

    id: str | None
    key: str | None
    name: str | None
    version: str | None
    version_template: Template | None  # set when ``version`` is an expression
    description: str | None
    spec_version: str
    start: str
    states: dict[str, State]
    functions: dict[str, FunctionDef]
    events: dict[str, EventDef]
    errors: dict[str, ErrorDef]
    retries: dict[str, RetryDef]
    constants: dict[str, Any]
    secrets: tuple[str, ...]
    workflow_exec_timeout: WorkflowExecTimeout | None
    keep_active: bool = False
    auto_retries: bool = False
    #: ``timeouts.evaluationTimeout``: seconds one expression or template evaluation may take.
    evaluation_timeout: float | None = None
    data_input_schema: DataInputSchema | None = None
    #: SonataFlow's ``workflow-output-schema`` extension: the workflow output must match it.
    output_schema: DataInputSchema | None = None
    expression_lang: str = "jq"
    #: Some expression reads ``$WORKFLOW.prevActionResult``: only then do action sequences track it.
    tracks_previous_result: bool = False
    annotations: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    base_dir: str | None = None
    source_name: str | None = None
    schedule: Any = None
    extras: dict[str, Any] = field(default_factory=dict)
    #: ``mcpServers`` (xflow-runtime extension): name → :class:`xflow_runtime.mcp.config.McpServerDef`
    mcp_servers: dict[str, Any] = field(default_factory=dict)

    @property
    def workflow_id(self) -> str:
        return self.id or self.key or ""

    @property
    def start_state(self) -> State:
        return self.states[self.start]

    def __hash__(self) -> int:  # plans are used as dict keys by registries and caches
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other
