"""The ``aiagentproxy`` state handler (specs/states-human.md §7): an agent built elsewhere, behind
the state contract, called **synchronously** through its workflow function (a ``rest`` function
is an HTTP endpoint; a ``custom`` one Python code) or a subflow.

The call's arguments are ``{workflowId, agentConfig: {agentName, systemMessage},
agentContext: {userMessage, messages: <chat-memory window>, memoryId}}``; the result is
``{returnValues, log?}`` (a result without ``returnValues`` is taken whole as the return values),
which becomes ``$agentOutcome``. The user message and the agent's answer are appended to the
chat memory like an ``aiagent`` turn. Outcomes, ``dataFilter``, ``onErrors`` as for ``aiagent``.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from xflow_runtime.error_codes import AGENT_NO_OUTCOME, AGENT_PROXY_NO_RESULT
from xflow_runtime.agent.conversation import conversations_for
from xflow_runtime.agent.handler import _chat_scope, _instance_scoped
from xflow_runtime.agent.outcomes import apply_outcome_filter, outcome_variables, select_outcome
from xflow_runtime.errors import WorkflowError
from xflow_runtime.interpreter.state_run import StateRun
from xflow_runtime.agent.plan import OutcomeFilter
from xflow_runtime.agent.proxy_plan import AgentProxyState
from xflow_runtime.plan.model import Action, Exit

_DEFAULT = OutcomeFilter()
_WINDOW_MODEL = "gpt-4o"  # sizes the history window by tokens (the external agent's model is unknown)


async def handle_agent_proxy(state: AgentProxyState, data: Any, run: StateRun, scope: str) -> tuple[Any, Exit | None]:
    variables = run.variables
    chat_scope = _chat_scope(state, data, run)
    store = conversations_for(run.root, persistent=not _instance_scoped(state))
    history = await store.load(chat_scope, state.memory.policy, model=_WINDOW_MODEL, step=f"{scope}/memory-load:1")
    user_text = await state.user_message.render_async(data, variables)
    arguments = {
        "workflowId": run.workflow_id,
        "agentConfig": {"agentName": state.agent_name,
                        "systemMessage": None if state.system_message is None
                        else await state.system_message.render_async(data, variables)},
        "agentContext": {"userMessage": user_text, "messages": history,
                         "memoryId": getattr(chat_scope, "memory_id", None)},
    }
    result = await run.invoke(Action(label=state.agent_name, ref=state.execution), arguments, f"{scope}/agent")
    agent_outcome = _outcome(state, result)
    await store.append(chat_scope, [{"role": "user", "content": user_text},
                                    {"role": "assistant", "content": agent_outcome["log"]}],
                       model=_WINDOW_MODEL, step=f"{scope}/memory-append:1")
    bound = outcome_variables(variables, agent_outcome)
    outcome = await select_outcome(state.outcomes, data, bound)
    if outcome is None:
        if state.exit is None:
            raise WorkflowError(f"agent '{state.agent_name}': no outcome matched and the state has no transition",
                                code=AGENT_NO_OUTCOME)
        data = await apply_outcome_filter(_DEFAULT, data, agent_outcome, bound)
        exit_ = None
    else:
        data, exit_ = await apply_outcome_filter(outcome.filter, data, agent_outcome, bound), outcome.exit
    return (data if state.data_filter is None else await state.data_filter.evaluate_async(data, variables)), exit_


def _outcome(state: AgentProxyState, result: Any) -> dict[str, Any]:
    if isinstance(result, Mapping) and "returnValues" in result:
        values, log = result["returnValues"], result.get("log")
    else:
        values, log = result, None
    if values is None:
        raise WorkflowError(f"agent '{state.agent_name}' returned no result", code=AGENT_PROXY_NO_RESULT)
    if log is None:
        log = values.get("response") if isinstance(values, Mapping) and isinstance(values.get("response"), str) \
            else json.dumps(values)
    return {"returnValues": values, "log": str(log)}
