"""Compiled ``userproxyagent`` states (specs/states-human.md §6). Named in :mod:`xflow_runtime.state_types`.

A facilitator talks through an internal ``aiagent`` state compiled from its own fields (model,
``llmConfig``) with a fixed output ``{response, data}``; the handler renders the instructions
itself, so the internal state's messages are placeholders."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping

from xflow_runtime.expressions import JqExpression
from xflow_runtime.agent.plan import AgentOutcome, AIAgentState, compile_aiagent, compile_outcome
from xflow_runtime.plan.context import CompileContext, require
from xflow_runtime.plan.definitions import invalid
from xflow_runtime.plan.states import State
from xflow_runtime.plan.templates import Template

#: What the facilitator's model answers each turn: a message for the user and what it gathered.
FACILITATOR_OUTPUT = {"type": "object", "required": ["response", "data"],
                      "properties": {"response": {"type": "string"}, "data": {"type": "object"}}}


@dataclass(frozen=True, kw_only=True)
class UserProxyState(State):
    agent_name: str
    role: Literal["relay", "facilitator"]
    user_message: Any = None      # Prompt | None
    relay_text: Any = None        # Prompt | None
    relay_medias: tuple[Mapping[str, Any], ...] = ()
    relay_media_exp: JqExpression | None = None
    collect_schema: Any = None    # CompiledSchema (facilitator)
    known_data: Template | None = None
    outcomes: tuple[AgentOutcome, ...] = ()
    data_filter: JqExpression | None = None
    talker: AIAgentState | None = None  # facilitator: the internal agent that calls the model


def compile_user_proxy(raw: dict, ctx: CompileContext, common: dict[str, Any]) -> State:
    from xflow_runtime.agent.prompts import compile_prompt
    from xflow_runtime.agent.schemas import compile_schema

    where = ctx.where
    agent_name = require(raw, "agentName", where)
    role_raw = raw.get("agentRole") or "relay"
    if role_raw not in ("relay", "facilitator"):
        raise invalid(f"{where}/agentRole", f"expected relay or facilitator, found {role_raw!r}")
    role: Literal["relay", "facilitator"] = "facilitator" if role_raw == "facilitator" else "relay"
    relay = raw.get("relayMessage") or {}
    outcomes = tuple(compile_outcome(item, ctx, f"{where}/agentOutcomes/{i}")
                     for i, item in enumerate(raw.get("agentOutcomes") or ()))
    if common.get("exit") is None and (not outcomes or any(o.finish and o.exit is None for o in outcomes)):
        raise invalid(where, "without outcomes, or with a finishing outcome without a transition, the state needs "
                             "its own 'transition' or 'end'")
    collect, talker = None, None
    if role == "facilitator":
        schema_raw = (raw.get("collectDataSchema") or {}).get("schema")
        if schema_raw is None:
            raise invalid(f"{where}/collectDataSchema", "a facilitator needs collectDataSchema.schema")
        collect = compile_schema(schema_raw, f"{where}/collectDataSchema/schema", ctx.base_dir)
        internal = {"agentName": agent_name, "userMessage": "-", "output": {"schema": FACILITATOR_OUTPUT},
                    "maxToolExecutions": 0, "agentOutcomes": [{"finish": True, "end": True}],
                    **{k: raw[k] for k in ("aiModel", "llmConfig") if k in raw}}
        if raw.get("memoryId"):  # the flat memoryId of the proxy states (an expression allowed)
            internal["memory"] = {"memoryId": raw["memoryId"]}
        talker = compile_aiagent(internal, ctx, {"name": common["name"], "type": "aiagent"})
    return UserProxyState(
        **common, agent_name=agent_name, role=role,
        user_message=compile_prompt(raw["userMessage"], f"{where}/userMessage") if raw.get("userMessage") else None,
        relay_text=compile_prompt(relay["text"], f"{where}/relayMessage/text") if relay.get("text") else None,
        relay_medias=tuple(relay.get("medias") or ()),
        relay_media_exp=ctx.expression(relay.get("mediaExp"), f"{where}/relayMessage/mediaExp"),
        collect_schema=collect, known_data=ctx.template(raw.get("knownData"), f"{where}/knownData"),
        outcomes=outcomes, data_filter=ctx.expression(raw.get("dataFilter"), f"{where}/dataFilter"),
        talker=talker,
    )
