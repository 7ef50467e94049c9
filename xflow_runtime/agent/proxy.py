"""The ``aiagentproxy`` state handler (specs/states-human.md §7): an agent built elsewhere, behind
the state contract, called through its workflow function (a ``rest`` function is an HTTP
endpoint; a ``custom`` one Python code) or a subflow. It answers synchronously (the function's
result), or acknowledges and answers later on the callback endpoint: when the runtime has
callback settings the call also carries ``requestId``, ``callbackUrl`` (with a signed token) and
``callbackToken``, and the state waits durably for the answer (:mod:`.proxy_callbacks`). A
``type: a2a`` function is an A2A agent, reached by :mod:`xflow_runtime.a2a.proxy` (blocking, push or poll;
specs/a2a.md).

The call's arguments are ``{workflowId, agentConfig: {agentName, systemMessage},
agentContext: {userMessage, messages: <chat-memory window>, memoryId}}``; the result is
``{returnValues, log?}`` (a result without ``returnValues`` is taken whole as the return values),
which becomes ``$agentOutcome``. The user message and the agent's answer are appended to the
chat memory like an ``aiagent`` turn. Outcomes, ``dataFilter``, ``onErrors`` as for ``aiagent``.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Mapping

from xflow_runtime.error_codes import AGENT_NO_OUTCOME, AGENT_PROXY_NO_CALLBACK, AGENT_PROXY_NO_RESULT, TIMEOUT
from xflow_runtime.agent.conversation import conversations_for
from xflow_runtime.agent.handler import _chat_scope, _instance_scoped
from xflow_runtime.agent.proxy_callbacks import ANSWERED, DEFAULT_WAIT_SECONDS, REQUEST_ATTRIBUTE
from xflow_runtime.agent.outcomes import apply_outcome_filter, outcome_variables, select_outcome
from xflow_runtime.errors import WorkflowError
from xflow_runtime.interpreter import records
from xflow_runtime.interpreter.state_run import StateRun
from xflow_runtime.agent.plan import OutcomeFilter
from xflow_runtime.agent.proxy_plan import AgentProxyState
from xflow_runtime.plan.model import Action, Correlation, EventDef, Exit

_DEFAULT = OutcomeFilter()
_WINDOW_MODEL = "gpt-4o"  # sizes the history window by tokens (the external agent's model is unknown)


async def handle_agent_proxy(state: AgentProxyState, data: Any, run: StateRun, scope: str) -> tuple[Any, Exit | None]:
    variables = run.variables
    chat_scope = _chat_scope(state, data, run)
    store = conversations_for(run.root, persistent=not _instance_scoped(state))
    history = await store.load(chat_scope, state.memory.policy, model=_WINDOW_MODEL, step=f"{scope}/memory-load:1")
    user_text = await state.user_message.render_async(data, variables)
    arguments: dict[str, Any] = {
        "workflowId": run.workflow_id,
        "agentConfig": {"agentName": state.agent_name,
                        "systemMessage": None if state.system_message is None
                        else await state.system_message.render_async(data, variables)},
        "agentContext": {"userMessage": user_text, "messages": history,
                         "memoryId": getattr(chat_scope, "memory_id", None)},
    }
    if _is_a2a(state):
        from xflow_runtime.a2a.proxy import call_agent

        context_data = {key: arguments[key] for key in ("workflowId", "agentConfig", "agentContext")}
        agent_outcome = await call_agent(state, run, scope, user_text, context_data)
    else:
        agent_outcome = _outcome(state, await _call(state, run, scope, arguments))
    await store.append(chat_scope, [{"role": "user", "content": user_text},
                                    {"role": "assistant", "content": agent_outcome["log"]}],
                       model=_WINDOW_MODEL, step=f"{scope}/memory-append:1")
    bound = outcome_variables(variables, agent_outcome)
    outcome = await select_outcome(state.outcomes, data, bound)
    if outcome is None and agent_outcome.get("status") == "input-required":
        from xflow_runtime.a2a import INPUT_REQUIRED

        raise WorkflowError(f"agent '{state.agent_name}' needs input ({agent_outcome['log']}) and no outcome "
                            "routes $agentOutcome.status == \"input-required\"", code=INPUT_REQUIRED,
                            details={"taskId": agent_outcome.get("taskId"), "question": agent_outcome["log"]})
    if outcome is None:
        if state.exit is None:
            raise WorkflowError(f"agent '{state.agent_name}': no outcome matched and the state has no transition",
                                code=AGENT_NO_OUTCOME)
        data = await apply_outcome_filter(_DEFAULT, data, agent_outcome, bound)
        exit_ = None
    else:
        data, exit_ = await apply_outcome_filter(outcome.filter, data, agent_outcome, bound), outcome.exit
    return (data if state.data_filter is None else await state.data_filter.evaluate_async(data, variables)), exit_


async def _call(state: AgentProxyState, run: StateRun, scope: str, arguments: dict[str, Any]) -> Any:
    """The agent's answer through xFlow's own contract: the function's result, or (acknowledged)
    what the callback later delivers."""
    callbacks = run.services.agent_callbacks
    waiting = None
    if callbacks is not None and callbacks.enabled:
        waiting = await _open_request(state, run, scope, callbacks)
        arguments.update(requestId=waiting.request_id, callbackUrl=waiting.url, callbackToken=waiting.token)
    result = await run.invoke(Action(label=state.agent_name, ref=state.execution), arguments, f"{scope}/agent")
    if _acknowledged(result, waiting):
        if waiting is None or callbacks is None:
            raise WorkflowError(f"agent '{state.agent_name}' acknowledged the request (asynchronous mode) but this "
                                "runtime takes no callbacks: give it callback settings (xflow serve "
                                "--callback-secret-env)", code=AGENT_PROXY_NO_CALLBACK)
        run.record(records.AGENT_PROXY_WAITING, state=state.name, request_id=waiting.request_id)
        return await _wait(state, run, scope, callbacks.store, waiting)
    if waiting is not None and callbacks is not None:  # answered synchronously: a later callback for the request is refused
        answered = result
        await run.port.run_step(f"{scope}/request-close",
                                lambda: asyncio.to_thread(callbacks.store.close_answered, waiting.request_id, answered))
    return result


@dataclass(frozen=True)
class _Waiting:
    request_id: str
    expires_at: float
    url: str
    token: str


async def _open_request(state: AgentProxyState, run: StateRun, scope: str, callbacks: Any) -> _Waiting:
    """A request id (recorded), its row (created before the agent is called, so an answer faster
    than the call's own reply finds it) and its callback URL and token."""
    root = run.root
    request_id = await run.port.new_id()
    expires_at = float(int(await run.port.now() + (state.timeouts.event or DEFAULT_WAIT_SECONDS)))
    fields = {"id": request_id, "tenant_id": run.services.identity.tenant, "instance_id": root.instance_id,
              "workflow_id": run.workflow_id, "state_name": state.name, "agent_name": state.agent_name,
              "expires_at": expires_at}
    await run.port.run_step(f"{scope}/request-create", lambda: asyncio.to_thread(callbacks.store.create, fields))
    url, token = callbacks.callback_for(root.instance_id, request_id, expires_at)
    return _Waiting(request_id, expires_at, url, token)


def _acknowledged(result: Any, waiting: _Waiting | None) -> bool:
    """An acknowledgement, not an answer: nothing (an empty 202), the request id alone, or an
    object with ``requestId`` and no ``returnValues``."""
    if result is None:
        return waiting is not None
    if isinstance(result, str):
        return waiting is not None and result == waiting.request_id
    return isinstance(result, Mapping) and "requestId" in result and "returnValues" not in result


async def _wait(state: AgentProxyState, run: StateRun, scope: str, requests: Any, waiting: _Waiting) -> Any:
    """The answer the request's row holds once a callback woke the instance; ``code: timeout``
    when none came before the deadline. A wake-up whose row is still waiting (an event anyone
    could have posted) is recorded and ignored."""
    definition = EventDef(name="agentproxy-answered", type=ANSWERED, source=None,
                          correlation=(Correlation(REQUEST_ATTRIBUTE, waiting.request_id),))
    wakes = 0
    while True:
        timeout = max(0.0, waiting.expires_at - await run.port.now())
        received = await run.inbox.receive((definition,), timeout, {})
        if received is None:
            row = await run.port.run_step(f"{scope}/request-timeout",
                                          lambda: asyncio.to_thread(requests.time_out, waiting.request_id))
        else:
            wakes += 1
            row = await run.port.run_step(f"{scope}/request-read:{wakes}",
                                          lambda: asyncio.to_thread(requests.get, waiting.request_id))
        if row is not None and row["status"] == "answered":
            return _answered(state, row["answer"])
        if received is None:
            raise WorkflowError(f"agent '{state.agent_name}' did not call back in time (request "
                                f"{waiting.request_id})", name="timeout", code=TIMEOUT)
        run.record(records.AGENT_PROXY_EVENT_IGNORED, state=state.name, request_id=waiting.request_id)


def _answered(state: AgentProxyState, answer: Mapping[str, Any]) -> Any:
    error = answer.get("error")
    if isinstance(error, Mapping):
        raise WorkflowError(f"agent '{state.agent_name}' failed: {error.get('message')}",
                            code=error.get("code") or "AgentProxyFailed")
    return answer


def _is_a2a(state: AgentProxyState) -> bool:
    function = getattr(state.execution, "function", None)
    return function is not None and function.type == "a2a"


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
