"""Choosing an agent outcome and merging its data (pure).

``agentOutcomes`` are tried in order; the first whose ``condition`` is true (or that has none)
wins. Its ``dataFilter`` follows event-data-filter semantics with ``$agentOutcome`` as the event
payload: ``data`` is evaluated with ``.`` = ``$agentOutcome`` (absent: ``.returnValues``),
``useData: false`` merges nothing, ``toStateData`` says where the payload is merged (absent: at the
top level, which needs an object). Merging follows the SW 0.8 rules (``expressions.merge``).
"""

from __future__ import annotations

from typing import Any, Mapping

from xflow_runtime.error_codes import AGENT_OUTCOME_DATA_INVALID
from xflow_runtime.errors import WorkflowError
from xflow_runtime.expressions import merge, merge_at_path
from xflow_runtime.agent.plan import AgentOutcome, OutcomeFilter


def outcome_variables(variables: Mapping[str, Any], agent_outcome: Any) -> dict[str, Any]:
    return {**variables, "agentOutcome": agent_outcome}


async def select_outcome(outcomes: tuple[AgentOutcome, ...], data: Any, variables: Mapping[str, Any]) -> AgentOutcome | None:
    """The first outcome whose condition holds on the state data (``variables`` bind ``$agentOutcome``)."""
    for outcome in outcomes:
        if outcome.condition is None or await outcome.condition.evaluate_condition_async(data, variables):
            return outcome
    return None


async def apply_outcome_filter(flt: OutcomeFilter, data: Any, agent_outcome: Mapping[str, Any],
                         variables: Mapping[str, Any]) -> Any:
    """The state data after merging the outcome's payload."""
    if not flt.use_data:
        return data
    payload = (agent_outcome.get("returnValues") if flt.data is None
               else await flt.data.evaluate_async(agent_outcome, variables))
    if flt.to_state_data is not None:
        return merge_at_path(data, await flt.to_state_data.path_async(data, variables), payload)
    if payload is None:
        return data
    if not isinstance(payload, Mapping):
        raise WorkflowError(f"agent outcome data is a {type(payload).__name__}; only an object can be merged into "
                            "the state data without 'toStateData'", code=AGENT_OUTCOME_DATA_INVALID)
    return merge(data, payload)
