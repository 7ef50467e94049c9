"""Parallel and foreach states: work on copies of the state data, joined deterministically."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from xflow_runtime.error_codes import INVALID_INPUT_COLLECTION
from xflow_runtime.expressions import get_path, merge, set_path
from xflow_runtime.interpreter.actions import SKIPPED, perform, with_previous_result
from xflow_runtime.interpreter.concurrency import all_of, at_least, within
from xflow_runtime.interpreter.data import merge_action_result, merge_into
from xflow_runtime.interpreter.failures import Failure
from xflow_runtime.plan.model import Exit
from xflow_runtime.plan.states import Branch, ForEachState, ParallelState

if TYPE_CHECKING:
    from xflow_runtime.interpreter.instance import Instance


async def parallel(state: ParallelState, data: Any, run: "Instance", scope: str) -> tuple[Any, Exit | None]:
    """Each branch runs its actions in order on its own copy of the data; completed branches' data
    is merged back in branch order. ``atLeast`` cancels the branches still running at the quorum."""
    branches = [_branch(run, branch, data, f"{scope}/b{i}") for i, branch in enumerate(state.branches)]
    if state.completion_type == "atLeast":
        finished = await at_least(run.port, branches, state.num_completed)
        results = [result for _, result in finished]
    else:
        results = await all_of(run.port, branches)
    for result in results:
        data = merge(data, result)
    return data, None


async def _branch(run: "Instance", branch: Branch, data: Any, scope: str) -> Any:
    work = run.run_actions(branch.actions, data, "sequential", scope, branch.timeouts)
    return await within(run.port, branch.timeouts.branch, work, f"branch '{branch.name}'")


async def foreach(state: ForEachState, data: Any, run: "Instance", scope: str) -> tuple[Any, Exit | None]:
    """One iteration per element of ``inputCollection`` (which must be an array), on a copy of the
    state data holding ``{iterationParam: element}``. Each iteration's result (its actions' filtered
    results merged in order) is appended at ``outputCollection`` in input order."""
    variables = run.variables
    items = await state.input_collection.evaluate_async(data, variables)
    if not isinstance(items, list):
        raise Failure(f"foreach '{state.name}': inputCollection must be an array, found "
                      f"{type(items).__name__ if items is not None else 'null'}", code=INVALID_INPUT_COLLECTION)
    if state.mode == "sequential":  # coroutines made one at a time: a failure leaves none unawaited
        results = [await _iteration(run, state, data, item, f"{scope}/i{i}") for i, item in enumerate(items)]
        return await _collect(state, data, results, variables), None
    iterations = [_iteration(run, state, data, item, f"{scope}/i{i}") for i, item in enumerate(items)]
    if state.batch_size is not None and state.batch_size < len(iterations):
        gate = asyncio.Semaphore(state.batch_size)
        results = await all_of(run.port, [_gated(gate, iteration) for iteration in iterations])
    else:
        results = await all_of(run.port, iterations)
    return await _collect(state, data, results, variables), None


async def _collect(state: ForEachState, data: Any, results: list[Any], variables: Any) -> Any:
    """Append the iteration results at ``outputCollection`` (plain append, input order)."""
    if state.output_collection is None:
        return data
    path = await state.output_collection.path_async(data, variables)
    current = get_path(data, path)
    collected = list(current) if isinstance(current, list) else []
    collected.extend(results)
    return set_path(data, path, collected)


async def _iteration(run: "Instance", state: ForEachState, data: Any, item: Any, scope: str) -> Any:
    working = dict(data) if isinstance(data, dict) else {}
    working[state.iteration_param] = item
    result: Any = None
    variables = {**run.variables, state.iteration_param: item}  # $item in the actions (SonataFlow)
    for i, action in enumerate(state.actions):
        try:
            raw = await perform(run, action, working, f"{scope}/{i}", state.timeouts, variables)
        except Failure as failure:
            raise failure.with_data(data)
        if raw is SKIPPED:
            continue
        working = await merge_action_result(working, action.filter, raw, action.label, variables)
        if run.plan.tracks_previous_result:
            variables = with_previous_result(variables, raw)
        if action.filter.use_results:
            selected = raw if action.filter.results is None else await action.filter.results.evaluate_async(raw, variables)
            result = await merge_into(result, action.filter.to_state_data, selected, action.label, variables)
    return result


async def _gated(gate: asyncio.Semaphore, iteration: Any) -> Any:
    async with gate:
        return await iteration
