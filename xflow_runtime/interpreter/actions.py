"""Running actions: condition → fromStateData → sleep.before → call (retries, timeout) →
sleep.after → results → toStateData/merge. Every call that has an effect goes through
``port.run_step`` under a deterministic step name ``<scope>/<index>:<label>#<attempt>``.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
from typing import TYPE_CHECKING, Any, Sequence

from xflow_runtime.interpreter import records
from xflow_runtime.error_codes import FUNCTION_NOT_IMPLEMENTED
from xflow_runtime.calling import call_arguments
from xflow_runtime.expressions import interpolate_async
from xflow_runtime.interpreter.concurrency import all_of, within
from xflow_runtime.interpreter.data import apply, merge_action_result
from xflow_runtime.interpreter.events import payload
from xflow_runtime.interpreter.failures import Failure
from xflow_runtime.interpreter.retries import next_delay, retry_strategy
from xflow_runtime.plan.model import Action, EventRef, FunctionRef, SubFlowRef, Timeouts

if TYPE_CHECKING:
    from xflow_runtime.interpreter.instance import Instance


class _Skipped:
    """The action did not produce a result to merge (condition false, async, useResults false)."""


SKIPPED = _Skipped()


async def run_actions(run: "Instance", actions: Sequence[Action], data: Any, mode: str, scope: str,
                      timeouts: Timeouts) -> Any:
    """Run ``actions`` and merge their results into ``data``.

    Sequential: each action sees the results of the ones before it. Parallel: every action reads
    the same snapshot; results are merged in definition order once all have finished.
    """
    if mode == "parallel" and len(actions) > 1:
        results = await all_of(run.port, [perform(run, action, data, f"{scope}/{i}", timeouts)
                                for i, action in enumerate(actions)])
        for action, result in zip(actions, results):
            if result is not SKIPPED:
                data = await merge_action_result(data, action.filter, result, action.label, run.variables)
        return data
    variables, tracked = run.variables, run.plan.tracks_previous_result
    for i, action in enumerate(actions):
        try:
            result = await perform(run, action, data, f"{scope}/{i}", timeouts, variables)
        except Failure as failure:
            raise failure.with_data(data)
        except asyncio.CancelledError:  # a state timeout: keep what was merged for onErrors
            run.progress[scope] = data
            raise
        if result is not SKIPPED:
            data = await merge_action_result(data, action.filter, result, action.label, variables)
            if tracked:
                variables = with_previous_result(variables, result)
    return data


def with_previous_result(variables: dict[str, Any], result: Any) -> dict[str, Any]:
    """``$WORKFLOW.prevActionResult``: the raw result of the action before, in a sequence (SonataFlow)."""
    return {**variables, "WORKFLOW": {**variables.get("WORKFLOW", {}), "prevActionResult": result}}


async def perform(run: "Instance", action: Action, data: Any, step: str, timeouts: Timeouts,
                  variables: dict[str, Any] | None = None) -> Any:
    """Everything up to the (unfiltered) result; :data:`SKIPPED` when there is nothing to merge.
    ``variables`` replaces the instance's (a foreach iteration adds its element)."""
    variables = run.variables if variables is None else variables
    try:
        if action.condition is not None and not await action.condition.evaluate_condition_async(data, variables):
            run.record(records.ACTION_SKIPPED, step=step, action=action.label)
            return SKIPPED
        action_input = await apply(action.filter.from_state_data, data, variables)
    except Exception as exc:  # noqa: BLE001 - expression failures are workflow errors
        raise Failure.from_exception(exc) from None
    if action.sleep_before:
        await run.port.sleep(action.sleep_before)
    if action.invoke == "async" and isinstance(action.ref, EventRef):
        # Producing the trigger event is the whole call: do it now, so it is ordered and listed.
        await _fire_and_forget(run, action, action_input, f"{step}:{action.label}#1", variables)
        result: Any = SKIPPED
    elif action.invoke == "async":
        ref = action.ref
        # Only subflows with onParentComplete: terminate die with the parent; other async calls finish.
        detached = not (isinstance(ref, SubFlowRef) and ref.on_parent_complete == "terminate")
        run.spawn(_fire_and_forget(run, action, action_input, f"{step}:{action.label}#1", variables),
                  detached=detached)
        result = SKIPPED
    else:
        result = await _with_retries(run, action, action_input, step, timeouts, variables)
    if action.sleep_after:
        await run.port.sleep(action.sleep_after)
    if not action.filter.use_results:
        return SKIPPED
    return result


async def _with_retries(run: "Instance", action: Action, action_input: Any, step: str, timeouts: Timeouts,
                        variables: dict[str, Any]) -> Any:
    attempt, previous_delay = 1, None
    limit = _attempt_limit(timeouts)
    while True:
        name = f"{step}:{action.label}#{attempt}"
        try:
            return await within(run.port, limit, invoke(run, action, action_input, name, variables),
                                f"action '{action.label}'")
        except Exception as exc:  # noqa: BLE001 - every failure is matched against the definitions
            failure = Failure.from_exception(exc)
            strategy = retry_strategy(action, failure, auto_retries=run.plan.auto_retries,
                                      known_errors=run.plan.errors)
            if strategy is None or attempt >= strategy.max_attempts:
                raise failure from None
            previous_delay = next_delay(strategy, attempt, previous_delay, f"{run.instance_id}/{step}")
            run.record(records.ACTION_RETRY, step=name, action=action.label, attempt=attempt,
                       delay=previous_delay, error=failure.to_dict())
            await run.port.sleep(previous_delay)
            attempt += 1


def _attempt_limit(timeouts: Timeouts) -> float | None:
    limits = [value for value in (timeouts.action, timeouts.state_single) if value is not None]
    return min(limits) if limits else None


async def invoke(run: "Instance", action: Action, action_input: Any, step: str,
                 variables: dict[str, Any] | None = None) -> Any:
    """One attempt of the action's call; the raw result."""
    ref = action.ref
    variables = run.variables if variables is None else variables
    if isinstance(ref, FunctionRef):
        return await _call_function(run, ref, action_input, step, variables)
    if isinstance(ref, SubFlowRef):
        return await run.run_subflow(ref, action_input, step)
    return await _call_by_event(run, ref, action_input, step, variables)


async def _call_function(run: "Instance", ref: FunctionRef, action_input: Any, step: str,
                         variables: dict[str, Any]) -> Any:
    if ref.expression is not None:  # pure: evaluated on the action input, nothing to record
        return await ref.expression.evaluate_async(action_input, variables)
    if ref.arguments is None:  # the action input is shared with the state data: hand out a copy
        arguments = copy.deepcopy(action_input) if isinstance(action_input, (dict, list)) else action_input
    else:
        arguments = await ref.arguments.render_async(action_input, variables)
    callable_ = run.context.functions.get(ref.function.name)
    if callable_ is not None:
        effect = lambda: _call_python(callable_, ref.function.name, arguments)  # noqa: E731
    elif ref.function.type == "mcp":  # the instance's own connections (xflow_runtime.mcp)
        from xflow_runtime.mcp.calls import call_function

        effect = lambda: call_function(run, ref.function, arguments)  # noqa: E731
    else:
        invoker = run.context.invoker
        if invoker is None:
            raise Failure(f"function '{ref.function.name}' has no implementation: register a Python callable "
                          "under its name or configure a function invoker", code=FUNCTION_NOT_IMPLEMENTED)
        selection_set = (None if ref.selection_set is None
                         else await interpolate_async(ref.selection_set, action_input, variables))
        effect = lambda: invoker(ref.function, arguments, selection_set=selection_set)  # noqa: E731
    if run.context.telemetry is not None:
        effect = _touching(effect)
    return await run.port.run_step(step, effect)


def _touching(effect: Any) -> Any:
    """The effect, starting the deferred spans above it when it really runs (not on a replay)."""
    async def run_effect() -> Any:
        from xflow_runtime.telemetry.spans import touch

        touch()
        return await effect()

    return run_effect


async def _call_python(function: Any, name: str, arguments: Any) -> Any:
    # The same argument rule as Runtime(functions=…) and python: operations (xflow_runtime.calling);
    # called on the loop, so a virtual-time run stays deterministic.
    args, kwargs = call_arguments(function, name, arguments)
    result = function(*args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


async def _call_by_event(run: "Instance", ref: EventRef, action_input: Any, step: str,
                         variables: dict[str, Any]) -> Any:
    data = None if ref.data is None else await ref.data.render_async(action_input, variables)
    attributes = (None if ref.context_attributes is None
                  else await ref.context_attributes.render_async(action_input, variables))
    await run.emit(ref.trigger, data, attributes, step)
    if ref.invoke == "async" or ref.result is None:
        return None
    received = await run.inbox.receive((ref.result,), ref.result_event_timeout, run.correlation)
    if received is None:
        raise Failure.timeout(f"result event '{ref.result.name}'", ref.result_event_timeout or 0)
    definition, event = received
    run.record(records.EVENT_CONSUMED, step=step, event_name=definition.name, id=event.get("id"))
    return payload(event, definition)


async def _fire_and_forget(run: "Instance", action: Action, action_input: Any, step: str,
                           variables: dict[str, Any]) -> None:
    """``invoke: async``: no result, no retries, and errors never reach the workflow."""
    try:
        await invoke(run, action, action_input, step, variables)
    except Exception as exc:  # noqa: BLE001 - async errors are reported, never propagated
        run.record(records.ASYNC_ACTION_FAILED, step=step, action=action.label,
                   error=Failure.from_exception(exc).to_dict())
