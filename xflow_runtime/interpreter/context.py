"""What an execution needs from its surroundings: function implementations, secrets, subflows,
an event sink and an observer. Nothing here does I/O by itself.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Protocol

from xflow_runtime.interpreter.services import InstanceServices
from xflow_runtime.expressions.limits import EvaluationLimits
from xflow_runtime.plan.functions import FunctionDef
from xflow_runtime.plan.states import WorkflowPlan


class FunctionInvoker(Protocol):
    """Carries out a function call that is not a registered Python callable or an expression.

    The runtime wires :func:`xflow_runtime.functions.invoke_function` here (with its
    ``FunctionContext``). Failures are raised as :class:`~xflow_runtime.errors.WorkflowError`.
    """

    async def __call__(self, function: FunctionDef, arguments: Any, *, selection_set: str | None) -> Any: ...


#: Receives one dict per history event (``{"event": "state_entered", "state": …, …}``). It is called
#: synchronously on the interpreter's path: keep it cheap (append to a list, put on a queue).
Observer = Callable[[dict[str, Any]], None]

#: Receives each produced CloudEvent (a dict). May be a coroutine function.
EventSink = Callable[[dict[str, Any]], Any]


class WorkflowRegistry:
    """Workflows that ``subFlowRef`` and ``continueAs`` can name, by id (and version)."""

    def __init__(self, plans: Iterable[WorkflowPlan] = ()):
        self._plans: dict[str, list[WorkflowPlan]] = {}
        for plan in plans:
            self.add(plan)

    def add(self, plan: WorkflowPlan) -> None:
        self._plans.setdefault(plan.workflow_id, []).append(plan)

    def get(self, workflow_id: str, version: str | None = None) -> WorkflowPlan | None:
        """With ``version``, the plan with exactly that version; without, the last one added."""
        candidates = self._plans.get(workflow_id, ())
        if version is None:
            return candidates[-1] if candidates else None
        return next((plan for plan in reversed(candidates) if plan.version == version), None)

    @classmethod
    def of(cls, workflows: "WorkflowRegistry | Mapping[Any, WorkflowPlan] | Iterable[WorkflowPlan] | None"
           ) -> "WorkflowRegistry":
        if isinstance(workflows, WorkflowRegistry):
            return workflows
        if workflows is None:
            return cls()
        if isinstance(workflows, Mapping):
            return cls(workflows.values())
        return cls(workflows)


@dataclass
class ExecutionContext:
    """Per-execution surroundings. One context may serve many executions.

    - ``functions``: Python callables by function *name*; each gets the evaluated arguments (or the
      action input when the functionRef has no ``arguments``) by the rule of
      :mod:`xflow_runtime.calling` and returns the result (may be async).
    - ``invoker``: everything else (REST, GraphQL, ``custom`` by operation…).
    - ``secrets``: the values behind ``$SECRETS``.
    - ``workflows``: what ``subFlowRef`` / ``continueAs`` resolve against (the running plan is
      always found by its own id).
    - ``event_sink``: where produced events go (they are also listed on the result).
    - ``observer``: history hook, see :data:`Observer`.
    - ``services``: the instance's identity, LLM client and memories (read by the agent state;
      a mapping with the same keys is accepted).
    - ``telemetry``: spans of state visits, agent turns, LLM and tool calls (specs/observability.md).
    """

    functions: dict[str, Callable[..., Any]] = field(default_factory=dict)
    invoker: FunctionInvoker | None = None
    secrets: Mapping[str, Any] = field(default_factory=dict)
    workflows: WorkflowRegistry = field(default_factory=WorkflowRegistry)
    event_sink: EventSink | None = None
    observer: Observer | None = None
    instance_id: str | None = None
    services: InstanceServices = field(default_factory=InstanceServices)
    #: The budget of every evaluation (specs/limits.md); ``timeouts.evaluationTimeout`` overrides its time.
    evaluation_limits: EvaluationLimits | None = None
    #: Async subflows started with ``onParentComplete: continue``; the embedder may await them.
    detached: list[asyncio.Task[Any]] = field(default_factory=list)
    #: OpenTelemetry spans of the instance (:class:`xflow_runtime.telemetry.spans.Telemetry`);
    #: ``None``, the default, traces nothing.
    telemetry: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.workflows, WorkflowRegistry):
            self.workflows = WorkflowRegistry.of(self.workflows)
        self.services = InstanceServices.of(self.services)

    def register_function(self, name: str, function: Callable[..., Any]) -> None:
        """Implement the workflow function ``name`` with a plain Python callable (sync or async)."""
        self.functions[name] = function
