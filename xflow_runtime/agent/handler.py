"""The ``aiagent`` state handler (named in :mod:`xflow_runtime.state_types`; litellm is imported
only when the first LLM call is made).

One state visit is a conversation of one or more turns:

1. render ``systemMessage`` and ``userMessage`` against the state data;
2. load the history window, run the turn (:mod:`xflow_runtime.agent.turn`), store the turn;
3. bind ``$agentOutcome``, pick the outcome, merge its data;
4. ``finish: true`` (or no outcome matched) → leave by the outcome's transition or the state's;
   ``finish: false`` → report the reply (``agent_reply`` history record) and wait durably for the
   next user message on topic :data:`USER_MESSAGE_TOPIC`, then go to 2 with that message.

The wait is bounded by the state's ``timeouts.eventTimeout`` when set (then ``code: timeout``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from xflow_runtime.error_codes import AGENT_MESSAGE_INVALID, AGENT_NO_OUTCOME as NO_OUTCOME, TIMEOUT
from xflow_runtime.agent import AGENT_REPLY, USER_MESSAGE_TOPIC
from xflow_runtime.agent.conversation import conversations_for
from xflow_runtime.agent.longterm_hook import conversation_source, long_term_for
from xflow_runtime.agent.outcomes import apply_outcome_filter, outcome_variables, select_outcome
from xflow_runtime.agent.turn import Counters, Turn, targets_of
from xflow_runtime.errors import WorkflowError
from xflow_runtime.interpreter.state_run import StateRun
from xflow_runtime.llm.client import LLMClient, LLMSettings, default_client
from xflow_runtime.agent.plan import AIAgentState, OutcomeFilter
from xflow_runtime.plan.model import Exit



async def handle_aiagent(state: AIAgentState, data: Any, run: StateRun, scope: str) -> tuple[Any, Exit | None]:
    chat_scope = _chat_scope(state, data, run)
    store = conversations_for(run.root, persistent=not _instance_scoped(state))
    policy = state.memory.policy
    model = _model_name(state)
    counters = Counters()
    long_term = await long_term_for(state, run)  # None unless longTermMemory/factExtraction is enabled
    mcp_tools = await _mcp_tools(run, state, scope, long_term)
    user_text = await state.user_message.render_async(data, run.variables)
    turn_number = 0
    while True:
        turn_number += 1
        history = await store.load(chat_scope, policy, model=model, step=f"{scope}/memory-load:{turn_number}")
        system_text = await state.system_message.render_async(data, run.variables)
        turn = Turn(run, state, data, scope, counters, _client(run), long_term, mcp_tools)
        telemetry = run.context.telemetry
        if telemetry is None:
            result = await turn.run_turn(system_text, history, user_text)
        else:
            with telemetry.agent(state.agent_name, model, _conversation_id(state, chat_scope, run),
                                 replaying=getattr(run.port, "replaying", False)) as span:
                result = await turn.run_turn(system_text, history, user_text)
                span.set("gen_ai.usage.input_tokens", result.usage.get("prompt_tokens"))
                span.set("gen_ai.usage.output_tokens", result.usage.get("completion_tokens"))
        await store.append(chat_scope, result.messages, model=model, step=f"{scope}/memory-append:{turn_number}")
        if long_term is not None:
            await long_term.after_turn(run.port, f"{scope}/longterm-after-turn:{turn_number}",
                                       [*history, *result.messages], conversation_source(chat_scope))
        agent_outcome = result.outcome()
        variables = outcome_variables(run.variables, agent_outcome)
        outcome = await select_outcome(state.outcomes, data, variables)
        if outcome is None:
            if state.exit is None:
                raise WorkflowError(f"agent '{state.agent_name}': no outcome matched and the state has no "
                                    "transition or end", name=NO_OUTCOME, code=NO_OUTCOME)
            return await _finish(state, await apply_outcome_filter(_DEFAULT, data, agent_outcome, variables),
                                 run), None
        data = await apply_outcome_filter(outcome.filter, data, agent_outcome, variables)
        if outcome.finish:
            return await _finish(state, data, run), outcome.exit
        run.record(AGENT_REPLY, state=state.name, turn=turn_number, reply=reply_text(agent_outcome),
                   outcome=agent_outcome)
        message = await run.port.wait_event(USER_MESSAGE_TOPIC, state.timeouts.event)
        if message is None:
            raise WorkflowError(f"agent '{state.agent_name}': no user message within "
                                f"{state.timeouts.event:g} s", name=TIMEOUT, code=TIMEOUT)
        user_text = message_text(message)


async def _mcp_tools(run: Any, state: AIAgentState, scope: str, long_term: Any) -> dict[str, Any]:
    """The visit's MCP tools, listed once (a recorded step per server); empty without any."""
    if not state.mcp_tools:
        return {}
    from xflow_runtime.mcp.agent_tools import visit_tools

    taken = [tool.name for tool in state.tools]
    if long_term is not None:
        taken += [tool["function"]["name"] for tool in long_term.tools()]
    return await visit_tools(run, state, scope, taken)


def reply_text(agent_outcome: Mapping[str, Any]) -> str:
    """What a chat user sees: ``returnValues.response`` when it is text, else the final answer."""
    values = agent_outcome.get("returnValues")
    if isinstance(values, Mapping) and isinstance(values.get("response"), str):
        return values["response"]
    return str(agent_outcome.get("log") or "")


def message_text(message: Any) -> str:
    """A user message as sent: a string, or an object with ``text`` (or ``content``/``message``)."""
    if isinstance(message, str):
        return message
    if isinstance(message, Mapping):
        for key in ("text", "content", "message"):
            if isinstance(message.get(key), str):
                return message[key]
    raise WorkflowError(f"a user message must be a string or {{text: …}}, got {type(message).__name__}",
                        code=AGENT_MESSAGE_INVALID)


async def _finish(state: AIAgentState, data: Any, run: StateRun) -> Any:
    return data if state.data_filter is None else await state.data_filter.evaluate_async(data, run.variables)


def _client(run: StateRun) -> LLMClient:
    services = run.services
    if isinstance(services.llm, LLMClient):
        return services.llm
    if isinstance(services.llm, LLMSettings):
        services.llm = client = LLMClient(services.llm)
        return client
    return default_client()


def _chat_scope(state: AIAgentState, data: Any, run: StateRun) -> Any:
    """Where this state's history lives. The identity (``tenant``, ``user``) is the instance's,
    from ``services.identity``. A session scope without a memoryId is the instance's own
    history, shared by all its agent states whatever their ``agentName`` (so it is keyed by the
    top-level workflow id); with a memoryId, or in ``user`` mode, the ``agentName`` is part of the
    key (decided in ``specs/agent.md``)."""
    root = run.root  # a subflow's agent states share its history
    identity = run.services.identity
    memory = state.memory
    agent = f"workflow:{root.workflow_id}" if _instance_scoped(state) else state.agent_name
    scope = memory.scope(agent=agent, instance_id=root.instance_id, data=data, variables=run.variables,
                         tenant=identity.tenant, user=identity.user)
    epoch = identity.erasure_epoch  # writes after an erasure of the user are refused
    return scope if epoch is None else dataclasses.replace(scope, erasure_epoch=epoch)


def _conversation_id(state: AIAgentState, chat_scope: Any, run: Any) -> str:
    """``gen_ai.conversation.id``: the instance id for an instance's own history; for a shared
    history (memoryId, user mode) a digest of its key, so a memoryId that names a person never
    reaches a trace as such."""
    if _instance_scoped(state):
        return str(run.root.instance_id)
    import hashlib

    parts = (chat_scope.tenant, chat_scope.agent, chat_scope.user or "", chat_scope.session or "")
    return "sha256:" + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


def _instance_scoped(state: AIAgentState) -> bool:
    """No memoryId, session mode: the history of this instance only."""
    from xflow_runtime.memory.chat.scope import ScopeMode

    return state.memory.memory_id is None and state.memory.mode is ScopeMode.SESSION


def _model_name(state: AIAgentState) -> str:
    """The model whose tokenizer sizes the history window (the first target's)."""
    return targets_of(state.llm)[0].model


_DEFAULT = OutcomeFilter()  # no outcome matched: returnValues merged at the top level
