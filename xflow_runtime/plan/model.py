"""Frozen definitions shared by every state: filters, transitions, ends, errors, retries, events,
timeouts and actions. Everything here is compiled: expressions are :class:`JqExpression` objects,
durations are seconds, defaults are applied. The interpreter never looks at the raw document.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from xflow_runtime.expressions import JqExpression
from xflow_runtime.plan.functions import FunctionDef
from xflow_runtime.plan.templates import Template

Invoke = Literal["sync", "async"]


# --- data filters -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class StateDataFilter:
    input: JqExpression | None = None
    output: JqExpression | None = None


@dataclass(frozen=True, slots=True)
class ActionDataFilter:
    from_state_data: JqExpression | None = None
    use_results: bool = True
    results: JqExpression | None = None
    to_state_data: JqExpression | None = None  # compiled in path mode


@dataclass(frozen=True, slots=True)
class EventDataFilter:
    use_data: bool = True
    data: JqExpression | None = None
    to_state_data: JqExpression | None = None  # compiled in path mode


NO_STATE_FILTER = StateDataFilter()
NO_ACTION_FILTER = ActionDataFilter()
NO_EVENT_FILTER = EventDataFilter()


# --- events ----------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Correlation:
    attribute: str
    value: str | None = None


@dataclass(frozen=True, slots=True)
class EventDef:
    name: str
    type: str
    source: str | None
    kind: Literal["consumed", "produced"] = "consumed"
    correlation: tuple[Correlation, ...] = ()
    data_only: bool = True
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ProducedEvent:
    event: EventDef
    data: Template | None = None
    context_attributes: Template | None = None


# --- flow ------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ContinueAs:
    workflow_id: str
    version: str | None = None
    data: Template | None = None
    workflow_exec_timeout: "WorkflowExecTimeout | None" = None


@dataclass(frozen=True, slots=True)
class Transition:
    next_state: str
    produce_events: tuple[ProducedEvent, ...] = ()
    compensate: bool = False


@dataclass(frozen=True, slots=True)
class End:
    terminate: bool = False
    produce_events: tuple[ProducedEvent, ...] = ()
    compensate: bool = False
    continue_as: ContinueAs | None = None


Exit = Union[Transition, End]
PLAIN_END = End()


# --- errors, retries, timeouts ---------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ErrorDef:
    """A workflow error definition. ``code_pattern`` is set when ``code`` is written ``/regex/``
    (or ``/regex/i``) and is then searched in the error message (specs/semantics.md)."""

    name: str
    code: str | None = None
    description: str | None = None
    code_pattern: re.Pattern[str] | None = None


@dataclass(frozen=True, slots=True)
class OnError:
    errors: tuple[ErrorDef, ...]
    exit: Exit


@dataclass(frozen=True, slots=True)
class RetryDef:
    name: str
    max_attempts: int  # total attempts including the first one
    delay: float = 0.0
    increment: float = 0.0
    multiplier: float | None = None
    max_delay: float | None = None
    jitter_fraction: float = 0.0
    jitter_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class WorkflowExecTimeout:
    duration: float
    interrupt: bool = True
    run_before: str | None = None


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Effective timeouts in seconds; ``None`` means unlimited. State values already override the
    workflow's, so a state's :class:`Timeouts` is all the interpreter reads."""

    state_total: float | None = None
    state_single: float | None = None
    action: float | None = None
    branch: float | None = None
    event: float | None = None


NO_TIMEOUTS = Timeouts()


# --- actions ---------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class FunctionRef:
    function: FunctionDef
    arguments: Template | None = None
    selection_set: str | None = None
    invoke: Invoke = "sync"
    expression: JqExpression | None = None  # set for functions of type ``expression``

    @property
    def name(self) -> str:
        return self.function.name


@dataclass(frozen=True, slots=True)
class EventRef:
    trigger: EventDef
    #: None: produce the trigger event and go on (SonataFlow; ``invoke`` is then ``async``).
    result: EventDef | None
    result_event_timeout: float | None = None
    data: Template | None = None
    context_attributes: Template | None = None
    invoke: Invoke = "sync"

    @property
    def name(self) -> str:
        return self.trigger.name


@dataclass(frozen=True, slots=True)
class SubFlowRef:
    workflow_id: str
    version: str | None = None
    invoke: Invoke = "sync"
    on_parent_complete: Literal["terminate", "continue"] = "terminate"

    @property
    def name(self) -> str:
        return self.workflow_id


@dataclass(frozen=True, slots=True)
class Action:
    """One action. ``label`` names it in step names, errors and the ``<label>-output`` merge key:
    the action's ``name``, else its function / event / subflow reference."""

    label: str
    ref: FunctionRef | EventRef | SubFlowRef
    name: str | None = None
    id: str | None = None
    filter: ActionDataFilter = NO_ACTION_FILTER
    condition: JqExpression | None = None
    sleep_before: float | None = None
    sleep_after: float | None = None
    retry: RetryDef | None = None
    retryable_errors: tuple[ErrorDef, ...] | None = None
    non_retryable_errors: tuple[ErrorDef, ...] = ()

    @property
    def invoke(self) -> Invoke:
        return self.ref.invoke
