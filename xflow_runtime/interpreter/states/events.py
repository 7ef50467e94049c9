"""Event and callback states."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xflow_runtime.interpreter import records
from xflow_runtime.interpreter.data import merge_event_payload
from xflow_runtime.interpreter.events import payload
from xflow_runtime.plan.model import Exit, Timeouts
from xflow_runtime.plan.states import CallbackState, EventState, OnEvents

if TYPE_CHECKING:
    from xflow_runtime.interpreter.instance import Instance


async def event(state: EventState, data: Any, run: "Instance", scope: str) -> tuple[Any, Exit | None]:
    """``exclusive: true``: the first matching event runs its ``onEvents`` entry, then the state
    completes. ``exclusive: false``: every referenced event must arrive; then each entry, in order,
    merges its events and runs its actions. ``eventTimeout`` expiring skips the actions (no error).
    For the start state (whose events create the instance) it does not apply when exclusive, and
    bounds the gap between the events of the set when not."""
    timeout = state.timeouts.event
    starting = run.visits == 1 and run.parent is None and state.name == run.plan.start
    if state.exclusive and starting:
        timeout = None
    if state.exclusive:
        wanted = [definition for entry in state.on_events for definition in entry.events]
        received = await run.inbox.receive(wanted, timeout, run.correlation)
        if received is None:
            run.record(records.EVENT_TIMEOUT, state=state.name)
            return data, None
        definition, message = received
        entry = next(e for e in state.on_events if any(d is definition for d in e.events))
        return await _consume(run, entry, [(definition, message)], data, f"{scope}/e0",
                              state.timeouts), None
    return await _all_events(state, data, run, scope, timeout, gap=starting), None


async def _all_events(state: EventState, data: Any, run: "Instance", scope: str, timeout: float | None,
                      *, gap: bool) -> Any:
    missing = {definition.name: definition for entry in state.on_events for definition in entry.events}
    got: dict[str, dict[str, Any]] = {}
    deadline = None if timeout is None or gap else await run.port.now() + timeout
    while missing:
        remaining = None if deadline is None else max(0.0, deadline - await run.port.now())
        received = await run.inbox.receive(list(missing.values()), remaining, run.correlation)
        if received is None:
            run.record(records.EVENT_TIMEOUT, state=state.name, missing=sorted(missing))
            return data
        definition, message = received
        got[definition.name] = message
        del missing[definition.name]
        if gap and timeout is not None:  # start state: the next event must follow within the timeout
            deadline = await run.port.now() + timeout
    for i, entry in enumerate(state.on_events):
        data = await _consume(run, entry, [(d, got[d.name]) for d in entry.events], data, f"{scope}/e{i}",
                              state.timeouts)
    return data


async def _consume(run: "Instance", entry: OnEvents, events: list[tuple[Any, dict[str, Any]]], data: Any,
                   scope: str, timeouts: Timeouts) -> Any:
    for definition, message in events:
        run.record(records.EVENT_CONSUMED, event_name=definition.name, id=message.get("id"))
        data = await merge_event_payload(data, entry.filter, payload(message, definition), definition.name, run.variables)
    if entry.actions:
        data = await run.run_actions(entry.actions, data, entry.action_mode, scope, timeouts)
    return data


async def callback(state: CallbackState, data: Any, run: "Instance", scope: str) -> tuple[Any, Exit | None]:
    """Run the action and merge its result, then wait for the callback event and merge it. When
    ``eventTimeout`` passes first, the state simply moves on."""
    data = await run.run_actions((state.action,), data, "sequential", scope, state.timeouts)
    received = await run.inbox.receive((state.event,), state.timeouts.event, run.correlation)
    if received is None:
        run.record(records.EVENT_TIMEOUT, state=state.name)
        return data, None
    definition, message = received
    run.record(records.EVENT_CONSUMED, state=state.name, event_name=definition.name, id=message.get("id"))
    return await merge_event_payload(data, state.event_filter, payload(message, definition), definition.name,
                               run.variables), None
