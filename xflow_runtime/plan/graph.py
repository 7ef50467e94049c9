"""The states and transitions of a compiled plan as nodes and edges, for drawing (the console's
diagram, ``GET /v1/workflows/{id}/graph``; specs/console.md §2).

Every state is a node; every way out of a state is an edge with a ``kind`` saying why it is taken:
``transition`` (the state's own), ``condition`` / ``default`` (switch), ``error`` (``onErrors``),
``outcome`` (agent and task outcomes), ``timeout`` / ``delete`` (task), ``compensation`` (the
state that compensates this one). An ``end`` leaves no edge: the node says ``end: true``.
Sub-workflows an action starts are listed on the node (``subflows``), not drawn as nodes: they
are other definitions."""

from __future__ import annotations

from typing import Any

from xflow_runtime.plan.model import Action, End, Exit, SubFlowRef, Transition
from xflow_runtime.plan.states import (CallbackState, EventState, ForEachState, OperationState, ParallelState,
                                       State, SwitchState, WorkflowPlan)

#: What a state of this type waits for (a durable wait: the instance rests there).
_WAITS = {"event": "event", "callback": "event", "sleep": "timer", "usertask": "task", "aiagent": "message",
          "userproxyagent": "message"}
_LABEL_LIMIT = 60


def plan_graph(plan: WorkflowPlan) -> dict[str, Any]:
    """``{"start": name, "nodes": [...], "edges": [...]}`` in definition order."""
    nodes = [_node(plan, state) for state in plan.states.values()]
    edges: list[dict[str, Any]] = []
    for state in plan.states.values():
        edges.extend(_edges(state))
    return {"start": plan.start, "nodes": nodes, "edges": edges}


def _node(plan: WorkflowPlan, state: State) -> dict[str, Any]:
    ends = [exit_ for _, _, exit_ in _exits(state) if isinstance(exit_, End)]
    return {"id": state.name, "type": state.type, "start": state.name == plan.start, "end": bool(ends),
            "terminate": any(e.terminate for e in ends), "compensation": state.used_for_compensation,
            "waits": _waits(state), "agent": getattr(state, "agent_name", None), "memory": _memory(state),
            "subflows": sorted({a.ref.workflow_id for a in _actions(state)
                                                        if isinstance(a.ref, SubFlowRef)})}


def _memory(state: State) -> dict[str, Any] | None:
    """An agent's chat-memory settings: whose history it keeps and how much of it a call is given."""
    settings = getattr(state, "memory", None)
    policy = getattr(settings, "policy", None)
    if settings is None or policy is None:
        return None
    return {"scope": settings.mode.value, "memory_id": settings.memory_id, "max_messages": policy.message_limit,
            "max_tokens": policy.token_limit}


def _waits(state: State) -> str | None:
    if state.type == "switch" and isinstance(state, SwitchState) and state.event_conditions:
        return "event"
    if state.type == "aiagent" and all(o.finish for o in getattr(state, "outcomes", ())):
        return None  # an agent waits for the next message only through an outcome with finish: false
    return _WAITS.get(state.type)


def _actions(state: State) -> list[Action]:
    if isinstance(state, (OperationState, ForEachState)):
        return list(state.actions)
    if isinstance(state, ParallelState):
        return [action for branch in state.branches for action in branch.actions]
    if isinstance(state, EventState):
        return [action for on in state.on_events for action in on.actions]
    if isinstance(state, CallbackState):
        return [state.action]
    execution = getattr(state, "execution", None)  # aiagentproxy
    return [Action(label="agent", ref=execution)] if isinstance(execution, SubFlowRef) else []


def _exits(state: State) -> list[tuple[str, str | None, Exit]]:
    """(kind, label, exit) for every way out of the state, in the order they are tried."""
    found: list[tuple[str, str | None, Exit | None]] = []
    if isinstance(state, SwitchState):
        for condition in state.data_conditions:
            found.append(("condition", condition.name or _short(condition.condition.text), condition.exit))
        for event in state.event_conditions:
            found.append(("condition", event.name or event.event.name, event.exit))
        found.append(("default", "default", state.default))
    for outcome in getattr(state, "outcomes", ()) or ():
        text = _short(outcome.condition.text if outcome.condition is not None else "otherwise")
        if not outcome.finish:  # the agent answers and waits for the next message: a loop on itself
            found.append(("outcome", f"next turn: {text}", Transition(state.name)))
        else:  # a finishing outcome without its own way out takes the state's
            found.append(("outcome", text, outcome.exit or state.exit))
    found.append(("timeout", "timeout", getattr(state, "on_timeout", None)))
    found.append(("delete", "deleted", getattr(state, "on_delete", None)))
    if not getattr(state, "outcomes", ()):  # with outcomes, the state's own exit is taken through them
        found.append(("transition", None, state.exit))
    for on_error in state.on_errors:
        found.append(("error", ", ".join(e.name for e in on_error.errors) or "error", on_error.exit))
    return [(kind, label, exit_) for kind, label, exit_ in found if exit_ is not None]


def _edges(state: State) -> list[dict[str, Any]]:
    edges = [{"from": state.name, "to": exit_.next_state, "kind": kind, "label": label,
              "compensate": exit_.compensate}
             for kind, label, exit_ in _exits(state) if isinstance(exit_, Transition)]
    if state.compensated_by:
        edges.append({"from": state.name, "to": state.compensated_by, "kind": "compensation",
                      "label": "compensated by", "compensate": False})
    return edges


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _LABEL_LIMIT else text[:_LABEL_LIMIT - 1] + "…"
