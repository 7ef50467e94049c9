"""Compilers for actions, data filters and state exits (transition / end / onErrors)."""

from __future__ import annotations

from typing import Any, Mapping

from xflow_runtime.plan.context import CompileContext, require
from xflow_runtime.plan.definitions import compile_workflow_exec_timeout, invalid
from xflow_runtime.plan.durations import optional_duration
from xflow_runtime.plan.model import (
    NO_ACTION_FILTER,
    NO_EVENT_FILTER,
    NO_STATE_FILTER,
    PLAIN_END,
    Action,
    ActionDataFilter,
    ContinueAs,
    End,
    EventDataFilter,
    EventRef,
    Exit,
    FunctionRef,
    OnError,
    ProducedEvent,
    StateDataFilter,
    SubFlowRef,
    Transition,
)


def state_filter(raw: Any, ctx: CompileContext, where: str) -> StateDataFilter:
    if not raw:
        return NO_STATE_FILTER
    return StateDataFilter(ctx.expression(raw.get("input"), f"{where}/input"),
                           ctx.expression(raw.get("output"), f"{where}/output"))


def action_filter(raw: Any, ctx: CompileContext, where: str) -> ActionDataFilter:
    if not raw:
        return NO_ACTION_FILTER
    return ActionDataFilter(
        from_state_data=ctx.expression(raw.get("fromStateData"), f"{where}/fromStateData"),
        use_results=_flag(raw.get("useResults", True)),
        results=ctx.expression(raw.get("results"), f"{where}/results"),
        to_state_data=ctx.expression(raw.get("toStateData"), f"{where}/toStateData", path=True),
    )


def event_filter(raw: Any, ctx: CompileContext, where: str) -> EventDataFilter:
    if not raw:
        return NO_EVENT_FILTER
    return EventDataFilter(
        use_data=_flag(raw.get("useData", True)),
        data=ctx.expression(raw.get("data"), f"{where}/data"),
        to_state_data=ctx.expression(raw.get("toStateData"), f"{where}/toStateData", path=True),
    )


def compile_action(raw: Mapping[str, Any], ctx: CompileContext, where: str) -> Action:
    if not isinstance(raw, Mapping):
        raise invalid(where, "an action must be an object")
    refs = [key for key in ("functionRef", "eventRef", "subFlowRef") if raw.get(key) is not None]
    if len(refs) != 1:
        raise invalid(where, "an action needs exactly one of functionRef, eventRef, subFlowRef")
    kind = refs[0]
    ref: FunctionRef | EventRef | SubFlowRef
    if kind == "functionRef":
        ref = _function_ref(raw[kind], ctx, f"{where}/{kind}")
    elif kind == "eventRef":
        ref = _event_ref(raw[kind], ctx, f"{where}/{kind}")
    else:
        ref = _subflow_ref(raw[kind], ctx, f"{where}/{kind}")
    sleep = raw.get("sleep") or {}
    retryable = raw.get("retryableErrors")
    return Action(
        label=raw.get("name") or ref.name,
        ref=ref,
        name=raw.get("name"),
        id=raw.get("id"),
        filter=action_filter(raw.get("actionDataFilter"), ctx, f"{where}/actionDataFilter"),
        condition=ctx.expression(raw.get("condition"), f"{where}/condition"),
        sleep_before=optional_duration(sleep.get("before"), where=f"{where}/sleep/before"),
        sleep_after=optional_duration(sleep.get("after"), where=f"{where}/sleep/after"),
        retry=ctx.retry(raw["retryRef"], f"{where}/retryRef") if raw.get("retryRef") else None,
        retryable_errors=None if retryable is None else tuple(
            ctx.error(name, f"{where}/retryableErrors/{i}") for i, name in enumerate(retryable)),
        non_retryable_errors=tuple(
            ctx.error(name, f"{where}/nonRetryableErrors/{i}")
            for i, name in enumerate(raw.get("nonRetryableErrors") or ())),
    )


def compile_actions(raw: Any, ctx: CompileContext, where: str) -> tuple[Action, ...]:
    return tuple(compile_action(item, ctx, f"{where}/{i}") for i, item in enumerate(raw or ()))


def _function_ref(raw: Any, ctx: CompileContext, where: str) -> FunctionRef:
    if isinstance(raw, str):
        raw = {"refName": raw}
    function = ctx.function(require(raw, "refName", where), f"{where}/refName")
    expression = None
    if function.type == "expression":
        expression = ctx.expression(function.operation, f"/functions/{function.name}/operation")
    arguments = raw.get("arguments")
    return FunctionRef(
        function=function,
        # One string is one expression whose result is the whole argument value (SonataFlow; XF144).
        arguments=ctx.data(arguments, f"{where}/arguments") if isinstance(arguments, str)
        else ctx.template(arguments, f"{where}/arguments"),
        selection_set=raw.get("selectionSet"),
        invoke=_invoke(raw.get("invoke"), where),
        expression=expression,
    )


def _event_ref(raw: Mapping[str, Any], ctx: CompileContext, where: str) -> EventRef:
    result = raw.get("resultEventRef")  # absent: produce and go on (SonataFlow; the loader says XF142)
    return EventRef(
        trigger=ctx.event(require(raw, "triggerEventRef", where), f"{where}/triggerEventRef", "produced"),
        result=None if result is None else ctx.event(result, f"{where}/resultEventRef", "consumed"),
        result_event_timeout=optional_duration(raw.get("resultEventTimeout"), where=f"{where}/resultEventTimeout"),
        data=ctx.data(raw.get("data"), f"{where}/data"),
        context_attributes=ctx.template(raw.get("contextAttributes"), f"{where}/contextAttributes"),
        invoke="async" if result is None else _invoke(raw.get("invoke"), where),
    )


def _subflow_ref(raw: Any, ctx: CompileContext, where: str) -> SubFlowRef:
    if isinstance(raw, str):
        return SubFlowRef(workflow_id=raw)
    on_parent = raw.get("onParentComplete", "terminate")
    if on_parent not in ("terminate", "continue"):
        raise invalid(f"{where}/onParentComplete", f"{on_parent!r} is not 'terminate' or 'continue'")
    version = raw.get("version")
    return SubFlowRef(workflow_id=str(require(raw, "workflowId", where)),
                      version=None if version is None else str(version),
                      invoke=_invoke(raw.get("invoke"), where), on_parent_complete=on_parent)


def compile_exit(raw: Mapping[str, Any], ctx: CompileContext, where: str, *, required: bool) -> Exit | None:
    """The ``transition`` or ``end`` of ``raw`` (a state, condition or onErrors item)."""
    transition, end = raw.get("transition"), raw.get("end")
    if transition is not None and end not in (None, False):
        raise invalid(where, "has both 'transition' and 'end'")
    if transition is not None:
        return compile_transition(transition, ctx, f"{where}/transition")
    if end not in (None, False):
        return compile_end(end, ctx, f"{where}/end")
    if required:
        raise invalid(where, "needs a 'transition' or an 'end'")
    return None


def compile_required_exit(raw: Mapping[str, Any], ctx: CompileContext, where: str) -> Exit:
    exit = compile_exit(raw, ctx, where, required=True)
    assert exit is not None  # noqa: S101 - required=True raises instead of returning None
    return exit


def compile_transition(raw: Any, ctx: CompileContext, where: str) -> Transition:
    if isinstance(raw, str):
        return Transition(ctx.state_name(raw, where))
    return Transition(
        next_state=ctx.state_name(require(raw, "nextState", where), f"{where}/nextState"),
        produce_events=_produced(raw.get("produceEvents"), ctx, f"{where}/produceEvents"),
        compensate=_flag(raw.get("compensate", False)),
    )


def compile_end(raw: Any, ctx: CompileContext, where: str) -> End:
    if raw is True:
        return PLAIN_END
    continue_as = raw.get("continueAs")
    return End(
        terminate=_flag(raw.get("terminate", False)) or continue_as is not None,
        produce_events=_produced(raw.get("produceEvents"), ctx, f"{where}/produceEvents"),
        compensate=_flag(raw.get("compensate", False)),
        continue_as=None if continue_as is None else _continue_as(continue_as, ctx, f"{where}/continueAs"),
    )


def _continue_as(raw: Any, ctx: CompileContext, where: str) -> ContinueAs:
    if isinstance(raw, str):
        return ContinueAs(workflow_id=raw)
    version = raw.get("version")
    return ContinueAs(
        workflow_id=str(require(raw, "workflowId", where)),
        version=None if version is None else str(version),
        data=ctx.data(raw.get("data"), f"{where}/data"),
        workflow_exec_timeout=compile_workflow_exec_timeout(raw.get("workflowExecTimeout"),
                                                            f"{where}/workflowExecTimeout"),
    )


def _produced(raw: Any, ctx: CompileContext, where: str) -> tuple[ProducedEvent, ...]:
    return tuple(
        ProducedEvent(
            event=ctx.event(require(item, "eventRef", f"{where}/{i}"), f"{where}/{i}/eventRef", "produced"),
            data=ctx.data(item.get("data"), f"{where}/{i}/data"),
            context_attributes=ctx.template(item.get("contextAttributes"), f"{where}/{i}/contextAttributes"),
        )
        for i, item in enumerate(raw or ())
    )


def compile_on_errors(raw: Any, ctx: CompileContext, where: str) -> tuple[OnError, ...]:
    handlers = []
    for i, item in enumerate(raw or ()):
        here = f"{where}/{i}"
        names = item.get("errorRefs") or ([item["errorRef"]] if item.get("errorRef") else [])
        if not names:
            raise invalid(here, "needs 'errorRef' or 'errorRefs'")
        errors = tuple(ctx.error(name, f"{here}/errorRef") for name in names)
        handlers.append(OnError(errors=errors, exit=compile_required_exit(item, ctx, here)))
    return tuple(handlers)


def _invoke(value: Any, where: str) -> Any:
    value = value or "sync"
    if value not in ("sync", "async"):
        raise invalid(f"{where}/invoke", f"{value!r} is not 'sync' or 'async'")
    return value


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


__all__ = ["state_filter", "action_filter", "event_filter", "compile_action", "compile_actions",
           "compile_exit", "compile_end", "compile_transition", "compile_on_errors"]
