"""Compilers for the eight SW 0.8 state types, named in :mod:`xflow_runtime.state_types`."""

from __future__ import annotations

import re
from typing import Any, Mapping

from xflow_runtime.expressions import is_expression, strip_expression

from xflow_runtime.plan.actions import compile_action, compile_actions, compile_required_exit, event_filter
from xflow_runtime.plan.context import CompileContext, require
from xflow_runtime.plan.definitions import compile_timeouts, invalid
from xflow_runtime.plan.durations import parse_duration
from xflow_runtime.plan.states import (
    Branch,
    CallbackState,
    DataCondition,
    EventCondition,
    EventState,
    ForEachState,
    InjectState,
    OnEvents,
    OperationState,
    ParallelState,
    SleepState,
    State,
    SwitchState,
)

Common = dict[str, Any]


def _mode(raw: Mapping[str, Any], key: str, default: str, where: str) -> Any:
    value = raw.get(key) or default
    if value not in ("sequential", "parallel"):
        raise invalid(f"{where}/{key}", f"{value!r} is not 'sequential' or 'parallel'")
    return value


def operation(raw: dict[str, Any], ctx: CompileContext, common: Common) -> State:
    where = ctx.where
    return OperationState(**common, actions=compile_actions(require(raw, "actions", where), ctx, f"{where}/actions"),
                          action_mode=_mode(raw, "actionMode", "sequential", where))


def switch(raw: dict[str, Any], ctx: CompileContext, common: Common) -> State:
    where = ctx.where
    data_raw, event_raw = raw.get("dataConditions"), raw.get("eventConditions")
    if data_raw is not None and event_raw is not None:
        raise invalid(where, "a switch state has either dataConditions or eventConditions, not both")
    if data_raw is None and event_raw is None:
        raise invalid(where, "a switch state needs dataConditions or eventConditions")
    default_raw = raw.get("defaultCondition")  # absent: no match fails the state (SonataFlow; XF141)
    if default_raw is not None and not isinstance(default_raw, Mapping):
        raise invalid(where, "a switch state's 'defaultCondition' must be an object")
    data_conditions = tuple(
        DataCondition(
            condition=ctx.required_expression(require(item, "condition", f"{where}/dataConditions/{i}"),
                                              f"{where}/dataConditions/{i}/condition"),
            exit=compile_required_exit(item, ctx, f"{where}/dataConditions/{i}"),
            name=item.get("name"),
        )
        for i, item in enumerate(data_raw or ())
    )
    event_conditions = tuple(
        EventCondition(
            event=ctx.event(require(item, "eventRef", f"{where}/eventConditions/{i}"),
                            f"{where}/eventConditions/{i}/eventRef", "consumed"),
            exit=compile_required_exit(item, ctx, f"{where}/eventConditions/{i}"),
            filter=event_filter(item.get("eventDataFilter"), ctx, f"{where}/eventConditions/{i}/eventDataFilter"),
            name=item.get("name"),
        )
        for i, item in enumerate(event_raw or ())
    )
    return SwitchState(**common, data_conditions=data_conditions, event_conditions=event_conditions,
                       default=None if default_raw is None
                       else compile_required_exit(default_raw, ctx, f"{where}/defaultCondition"))


def sleep(raw: dict[str, Any], ctx: CompileContext, common: Common) -> State:
    where = ctx.where
    return SleepState(**common, duration=parse_duration(require(raw, "duration", where), where=f"{where}/duration"))


def inject(raw: dict[str, Any], ctx: CompileContext, common: Common) -> State:
    where = ctx.where
    data = require(raw, "data", where)
    if not isinstance(data, Mapping):
        raise invalid(f"{where}/data", f"inject data must be an object, found {type(data).__name__}")
    return InjectState(**common, data=data)


def parallel(raw: dict[str, Any], ctx: CompileContext, common: Common) -> State:
    where = ctx.where
    branches = tuple(
        Branch(
            name=str(require(item, "name", f"{where}/branches/{i}")),
            actions=compile_actions(require(item, "actions", f"{where}/branches/{i}"), ctx,
                                    f"{where}/branches/{i}/actions"),
            timeouts=compile_timeouts(item.get("timeouts"), f"{where}/branches/{i}/timeouts", common["timeouts"]),
        )
        for i, item in enumerate(require(raw, "branches", where))
    )
    completion: Any = raw.get("completionType") or "allOf"
    if completion not in ("allOf", "atLeast"):
        raise invalid(f"{where}/completionType", f"{completion!r} is not 'allOf' or 'atLeast'")
    num = 0
    if completion == "atLeast":
        try:
            num = int(require(raw, "numCompleted", where))
        except (TypeError, ValueError):
            raise invalid(f"{where}/numCompleted", f"expected a whole number, found {raw.get('numCompleted')!r}") from None
        if not 0 < num <= len(branches):
            raise invalid(f"{where}/numCompleted", f"must be between 1 and the {len(branches)} branches, found {num}")
    return ParallelState(**common, branches=branches, completion_type=completion, num_completed=num)


def foreach(raw: dict[str, Any], ctx: CompileContext, common: Common) -> State:
    where = ctx.where
    batch = raw.get("batchSize")
    if batch is not None:
        try:
            batch = int(batch)
        except (TypeError, ValueError):
            raise invalid(f"{where}/batchSize", f"expected a whole number, found {batch!r}") from None
        if batch < 1:
            raise invalid(f"{where}/batchSize", f"must be 1 or more, found {batch}")
    param = _iteration_param(raw.get("iterationParam"), f"{where}/iterationParam")
    outer = ctx.variables
    if param.isidentifier():  # the actions may also read the element as $<iterationParam> (SonataFlow)
        ctx.variables = outer + (param,)
    try:
        actions = compile_actions(require(raw, "actions", where), ctx, f"{where}/actions")
    finally:
        ctx.variables = outer
    return ForEachState(
        **common,
        input_collection=ctx.required_expression(require(raw, "inputCollection", where), f"{where}/inputCollection"),
        output_collection=ctx.expression(raw.get("outputCollection"), f"{where}/outputCollection", path=True),
        iteration_param=param,
        actions=actions,
        batch_size=batch,
        mode=_mode(raw, "mode", "parallel", where),
    )


def _iteration_param(value: Any, where: str) -> str:
    """A name; ``${ .name }`` (as in the spec's banking example) is read as ``name``."""
    if value is None or value == "":
        return "item"
    if not isinstance(value, str):
        raise invalid(where, f"expected a name, found {type(value).__name__}")
    if is_expression(value):
        body = strip_expression(value)
        if not re.fullmatch(r"\.[A-Za-z_][A-Za-z0-9_]*", body):
            raise invalid(where, f"{value!r} is not a name; write iterationParam: item")
        return body[1:]
    return value


def event(raw: dict[str, Any], ctx: CompileContext, common: Common) -> State:
    where = ctx.where
    on_events = tuple(
        OnEvents(
            events=tuple(ctx.event(name, f"{where}/onEvents/{i}/eventRefs/{j}", "consumed")
                         for j, name in enumerate(require(item, "eventRefs", f"{where}/onEvents/{i}"))),
            actions=compile_actions(item.get("actions"), ctx, f"{where}/onEvents/{i}/actions"),
            action_mode=_mode(item, "actionMode", "sequential", f"{where}/onEvents/{i}"),
            filter=event_filter(item.get("eventDataFilter"), ctx, f"{where}/onEvents/{i}/eventDataFilter"),
        )
        for i, item in enumerate(require(raw, "onEvents", where))
    )
    exclusive = raw.get("exclusive", True)
    return EventState(**common, on_events=on_events, exclusive=exclusive not in (False, "false"))


def callback(raw: dict[str, Any], ctx: CompileContext, common: Common) -> State:
    where = ctx.where
    return CallbackState(
        **common,
        action=compile_action(require(raw, "action", where), ctx, f"{where}/action"),
        event=ctx.event(require(raw, "eventRef", where), f"{where}/eventRef", "consumed"),
        event_filter=event_filter(raw.get("eventDataFilter"), ctx, f"{where}/eventDataFilter"),
    )
