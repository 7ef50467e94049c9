"""Pure data handling: filters, ``toStateData`` paths and the merge of results into state data.

Non-object results (decision in specs/semantics.md, "Merging"): a result that is not an object,
merged at the root of object state data with no ``toStateData``, goes under ``"<label>-output"``
(the SW 0.9 rule; ``label`` is the action's name, else its function/subflow/event name). A ``null``
result never changes the state data.
"""

from __future__ import annotations

from typing import Any, Mapping

from xflow_runtime.expressions import JqExpression, merge, merge_at_path
from xflow_runtime.plan.model import ActionDataFilter, EventDataFilter


async def apply(expression: JqExpression | None, data: Any, variables: Mapping[str, Any]) -> Any:
    """A present filter's result is used as it is (``null`` included); absent means identity."""
    return data if expression is None else await expression.evaluate_async(data, variables)


async def merge_into(data: Any, path_expression: JqExpression | None, result: Any, label: str,
               variables: Mapping[str, Any]) -> Any:
    """Merge ``result`` into ``data`` at the location ``path_expression`` names (root when absent)."""
    if result is None:
        return data
    if path_expression is not None:
        return merge_at_path(data, await path_expression.path_async(data, variables), result)
    if isinstance(data, dict) and not isinstance(result, dict):
        return merge_at_path(data, (f"{label}-output",), result)
    return merge(data, result)


async def merge_action_result(data: Any, action_filter: ActionDataFilter, raw_result: Any, label: str,
                        variables: Mapping[str, Any]) -> Any:
    """``results`` then ``toStateData`` + merge; nothing when ``useResults`` is false."""
    if not action_filter.use_results:
        return data
    result = await apply(action_filter.results, raw_result, variables)
    return await merge_into(data, action_filter.to_state_data, result, label, variables)


async def merge_event_payload(data: Any, event_filter: EventDataFilter, payload: Any, label: str,
                        variables: Mapping[str, Any]) -> Any:
    """``data`` then ``toStateData`` + merge; nothing when ``useData`` is false."""
    if not event_filter.use_data:
        return data
    selected = await apply(event_filter.data, payload, variables)
    return await merge_into(data, event_filter.to_state_data, selected, label, variables)
