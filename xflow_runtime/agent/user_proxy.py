"""The ``userproxyagent`` state handler (specs/states-human.md §6).

- **relay**: the relay message (``relayMessage.text``, else ``userMessage``) with its media
  (``medias`` + ``mediaExp``) goes to the user as an ``agent_reply`` record (what the service's
  chat endpoints, the SSE stream and ``xflow chat`` show); the state waits durably for the user's
  answer, which becomes ``$agentOutcome.returnValues.response``.
- **facilitator**: a turn loop with the model (one recorded LLM step per call): each turn the
  model sees the form's JSON Schema, what is known (``knownData`` + gathered so far) and the
  conversation, and answers ``{response, data}``. The gathered data is merged; once it is valid
  against ``collectDataSchema`` the state leaves by its outcomes with ``returnValues`` = the data.
  Otherwise ``response`` (the question, or why a value is invalid) goes to the user and the
  state waits for the next message. Each turn is kept as an ``aiagent`` turn is: in the
  instance's history, or in chat memory under ``memoryId`` (our extension, as on
  ``aiagentproxy``), windowed and loaded back each turn.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from xflow_runtime.error_codes import AGENT_KNOWN_DATA_INVALID, AGENT_NO_OUTCOME, TIMEOUT
from xflow_runtime.agent import AGENT_REPLY, USER_MESSAGE_TOPIC
from xflow_runtime.agent.conversation import conversations_for
from xflow_runtime.agent.handler import _chat_scope, _client, _instance_scoped, _model_name, message_text
from xflow_runtime.agent.outcomes import apply_outcome_filter, outcome_variables, select_outcome
from xflow_runtime.agent.turn import Counters, Turn
from xflow_runtime.errors import WorkflowError
from xflow_runtime.interpreter.state_run import StateRun
from xflow_runtime.expressions import merge
from xflow_runtime.agent.plan import OutcomeFilter
from xflow_runtime.plan.model import Exit
from xflow_runtime.agent.user_proxy_plan import UserProxyState

_DEFAULT = OutcomeFilter()
FACILITATOR_INSTRUCTIONS = (
    "You collect data from a user, one short friendly message at a time. The data must match this "
    "JSON Schema: {schema}\nAlready known (do not ask again): {known}\n{problems}"
    "Answer only with a JSON object {{\"response\": <your message to the user>, \"data\": <every field "
    "known so far, with the user's values>}}. Ask for what is missing or invalid; when everything is "
    "known, say thank you.")


async def handle_user_proxy(state: UserProxyState, data: Any, run: StateRun, scope: str) -> tuple[Any, Exit | None]:
    if state.role == "relay":
        answer = await _relay(state, data, run)
        agent_outcome = {"returnValues": {"response": answer}, "log": answer}
    else:
        collected = await _facilitate(state, data, run, scope)
        agent_outcome = {"returnValues": collected, "log": json.dumps(collected)}
    variables = outcome_variables(run.variables, agent_outcome)
    outcome = await select_outcome(state.outcomes, data, variables)
    if outcome is None:
        if state.exit is None:
            raise WorkflowError(f"agent '{state.agent_name}': no outcome matched and the state has no transition",
                                code=AGENT_NO_OUTCOME)
        return _finish(state, await apply_outcome_filter(_DEFAULT, data, agent_outcome, variables), run), None
    return _finish(state, await apply_outcome_filter(outcome.filter, data, agent_outcome, variables), run), outcome.exit


async def _relay(state: UserProxyState, data: Any, run: StateRun) -> str:
    prompt = state.relay_text or state.user_message
    text = "" if prompt is None else await prompt.render_async(data, run.variables)
    media = [dict(m) for m in state.relay_medias]
    if state.relay_media_exp is not None:
        extra = await state.relay_media_exp.evaluate_async(data, run.variables)
        media += [{"url": u} if isinstance(u, str) else u for u in (extra if isinstance(extra, list) else [extra])
                  if u is not None]
    run.record(AGENT_REPLY, state=state.name, turn=1, reply=text, media=media, outcome=None)
    return await _next_message(state, run)


async def _facilitate(state: UserProxyState, data: Any, run: StateRun, scope: str) -> dict[str, Any]:
    known = _known(state, data, run)
    if not state.collect_schema.errors(known):
        return known  # knownData already completes the form: nothing to ask
    assert state.talker is not None
    talker = state.talker
    # the conversation is kept like an aiagent's: the instance's history, or chat memory with a
    # memoryId (the user's erasure epoch applies there as for every agent write)
    chat_scope = _chat_scope(talker, data, run)
    store = conversations_for(run.root, persistent=not _instance_scoped(talker))
    model = _model_name(talker)
    user_text = await state.user_message.render_async(data, run.variables) if state.user_message is not None else "Hello."
    counters, client = Counters(), _client(run)
    problems: list[str] = []
    turn = 0
    while True:
        turn += 1
        history = await store.load(chat_scope, talker.memory.policy, model=model, step=f"{scope}/memory-load:{turn}")
        system_text = FACILITATOR_INSTRUCTIONS.format(
            schema=json.dumps(state.collect_schema.schema), known=json.dumps(known),
            problems="" if not problems else "Invalid values to ask again for: " + "; ".join(problems) + "\n")
        result = await Turn(run, talker, data, f"{scope}/turn:{turn}", counters, client, None).run_turn(
            system_text, history, user_text)
        await store.append(chat_scope, result.messages, model=model, step=f"{scope}/memory-append:{turn}")
        values = result.outcome()["returnValues"]
        gathered = values.get("data") if isinstance(values.get("data"), Mapping) else {}
        candidate = merge(known, dict(gathered))
        problems = state.collect_schema.errors(candidate)
        if not problems:
            return candidate
        known = _keep_valid(state, known, candidate)
        run.record(AGENT_REPLY, state=state.name, turn=turn, reply=str(values.get("response") or ""),
                   outcome={"missing": problems})
        user_text = await _next_message(state, run)


def _keep_valid(state: UserProxyState, known: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    """The candidate without the fields whose values break the schema (they must be asked again)."""
    kept = dict(candidate)
    for problem in state.collect_schema.errors(candidate):
        field = problem.split(":", 1)[0].strip("/").split("/", 1)[0]
        if field and field in kept:
            kept.pop(field)
    return kept


def _known(state: UserProxyState, data: Any, run: StateRun) -> dict[str, Any]:
    if state.known_data is None:
        return {}
    value = state.known_data.render(data, run.variables)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise WorkflowError("knownData must be a JSON object", code=AGENT_KNOWN_DATA_INVALID) from None
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise WorkflowError("knownData must be an object", code=AGENT_KNOWN_DATA_INVALID)
    return dict(value)


async def _next_message(state: UserProxyState, run: StateRun) -> str:
    message = await run.port.wait_event(USER_MESSAGE_TOPIC, state.timeouts.event)
    if message is None:
        raise WorkflowError(f"agent '{state.agent_name}': no user message within {state.timeouts.event:g} s",
                            name=TIMEOUT, code=TIMEOUT)
    return message_text(message)


def _finish(state: UserProxyState, data: Any, run: StateRun) -> Any:
    return data if state.data_filter is None else state.data_filter.evaluate(data, run.variables)
