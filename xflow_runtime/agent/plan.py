"""Compiled ``aiagent`` states; the outcome and execution compilers the other agent states share.

Named in :mod:`xflow_runtime.state_types`. Cheap to import: Jinja2,
jsonschema and litellm load only when a state that needs them is compiled or run. Every
decision the xFlow documentation leaves open is in ``specs/agent.md``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from xflow_runtime.errors import DefinitionError
from xflow_runtime.expressions import JqExpression
from xflow_runtime.plan.actions import _flag, compile_exit  # noqa: PLC2701 - shared compile helpers
from xflow_runtime.plan.context import CompileContext, require
from xflow_runtime.plan.definitions import invalid
from xflow_runtime.plan.model import Exit, FunctionRef, SubFlowRef
from xflow_runtime.plan.states import State

DEFAULT_SYSTEM_MESSAGE = "You are a helpful AI Assistant."
DEFAULT_MAX_TOOL_EXECUTIONS = 10
#: Variables bound in outcome conditions and data filters.
OUTCOME_VARIABLES = ("agentOutcome",)
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what OpenAI-compatible APIs accept


@dataclass(frozen=True)
class AgentTool:
    """A tool the model may call, bound to a workflow function or a subflow (``execution``)."""

    name: str
    description: str
    parameters: Any  # CompiledSchema
    output: Any | None  # CompiledSchema
    execution: FunctionRef | SubFlowRef
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def openai_tool(self) -> dict[str, Any]:
        description = self.description
        if self.output is not None:
            import json

            description = f"{description}\nReturns JSON matching: {json.dumps(self.output.schema, separators=(',', ':'))}"
        return {"type": "function", "function": {"name": self.name, "description": description.strip(),
                                                 "parameters": dict(self.parameters.schema)}}


@dataclass(frozen=True)
class McpToolSet:
    """``tools: [{mcp: {server, include, exclude}}]``: a server's tools, listed once per visit
    (:mod:`xflow_runtime.mcp.agent_tools`)."""

    server: Any  # xflow_runtime.mcp.config.McpServerDef
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()

    def offers(self, tool: str) -> bool:
        return (self.include is None or tool in self.include) and tool not in self.exclude


@dataclass(frozen=True)
class OutcomeFilter:
    """An outcome's ``dataFilter`` (event-data-filter semantics over ``$agentOutcome``)."""

    use_data: bool = True
    data: JqExpression | None = None
    to_state_data: JqExpression | None = None  # path mode


@dataclass(frozen=True)
class AgentOutcome:
    condition: JqExpression | None
    finish: bool
    filter: OutcomeFilter
    exit: Exit | None


@dataclass(frozen=True, kw_only=True)
class AIAgentState(State):
    agent_name: str
    ai_model: str
    llm: Any  # xflow_runtime.llm.config.LLMNode
    system_message: Any  # xflow_runtime.agent.prompts.Prompt
    user_message: Any
    output: Any | None  # CompiledSchema
    tools: tuple[AgentTool, ...] = ()
    mcp_tools: tuple[McpToolSet, ...] = ()
    max_tool_executions: int = DEFAULT_MAX_TOOL_EXECUTIONS
    memory: Any = None  # xflow_runtime.memory.chat.MemorySettings
    #: (LongTermMemorySettings, FactExtractionSettings) when either is enabled, else None
    long_term: Any = None
    outcomes: tuple[AgentOutcome, ...] = ()
    data_filter: JqExpression | None = None

    def tool(self, name: str) -> AgentTool | None:
        return next((tool for tool in self.tools if tool.name == name), None)


def compile_aiagent(raw: dict[str, Any], ctx: CompileContext, common: dict[str, Any]) -> AIAgentState:
    from xflow_runtime.agent.prompts import compile_prompt
    from xflow_runtime.agent.schemas import compile_schema
    from xflow_runtime.llm.config import compile_llm_config
    from xflow_runtime.llm.presets import DEFAULT_AI_MODEL, node_for_ai_model

    where = ctx.where
    agent_name = require(raw, "agentName", where)
    if not isinstance(agent_name, str) or not agent_name.strip():
        raise invalid(f"{where}/agentName", "expected a non-empty string")
    ai_model = raw.get("aiModel") or DEFAULT_AI_MODEL
    if not isinstance(ai_model, str):
        raise invalid(f"{where}/aiModel", "expected a model name")
    llm_raw = raw.get("llmConfig")
    llm = node_for_ai_model(ai_model) if llm_raw is None else compile_llm_config(
        llm_raw, default_model=ai_model, where=f"{where}/llmConfig")
    output_raw = raw.get("output")
    max_tools = raw.get("maxToolExecutions", DEFAULT_MAX_TOOL_EXECUTIONS)
    if isinstance(max_tools, bool) or not isinstance(max_tools, int) or max_tools < 0:
        raise invalid(f"{where}/maxToolExecutions", f"expected a whole number ≥ 0, found {max_tools!r}")
    outcomes = tuple(compile_outcome(item, ctx, f"{where}/agentOutcomes/{i}")
                     for i, item in enumerate(raw.get("agentOutcomes") or ()))
    if common.get("exit") is None and (not outcomes or any(o.finish and o.exit is None for o in outcomes)):
        raise invalid(where, "an agent without outcomes, or with an outcome with finish: true and no "
                             "transition, needs the state's own 'transition' or 'end'")
    return AIAgentState(
        **common,
        agent_name=agent_name,
        ai_model=ai_model,
        llm=llm,
        system_message=compile_prompt(raw.get("systemMessage") or DEFAULT_SYSTEM_MESSAGE, f"{where}/systemMessage"),
        user_message=compile_prompt(require(raw, "userMessage", where), f"{where}/userMessage"),
        output=None if output_raw is None else compile_schema(output_raw, f"{where}/output", ctx.base_dir),
        tools=(tools := _tools([*(item for item in raw.get("tools") or () if not _is_mcp_set(item)),
                                *_collaborator_tools(raw.get("collaborators"))], ctx, f"{where}/tools")),
        mcp_tools=_mcp_tool_sets(raw.get("tools"), tools, ctx, f"{where}/tools"),
        max_tool_executions=max_tools,
        memory=_memory(raw.get("memory"), f"{where}/memory"),
        long_term=_long_term(raw, where),
        outcomes=outcomes,
        data_filter=ctx.expression(raw.get("dataFilter"), f"{where}/dataFilter"),
    )


def _is_mcp_set(item: Any) -> bool:
    return isinstance(item, Mapping) and item.get("mcp") is not None


def _mcp_tool_sets(raw: Any, tools: tuple[AgentTool, ...], ctx: CompileContext, where: str) -> tuple[McpToolSet, ...]:
    """The ``{mcp: …}`` entries of ``tools``; the names of ``include``d tools are mapped now, so
    a collision with a named tool is reported at load time (specs/mcp.md, "Tool names")."""
    if not isinstance(raw, list) or not any(_is_mcp_set(item) for item in raw):
        return ()
    from xflow_runtime.errors import WorkflowError
    from xflow_runtime.mcp.names import assign

    servers = ctx.extras.get("mcp_servers") or {}
    sets: list[McpToolSet] = []
    for i, item in enumerate(raw):
        if not _is_mcp_set(item):
            continue
        at = f"{where}/{i}/mcp"
        spec = item["mcp"]
        if not isinstance(spec, Mapping) or set(item) != {"mcp"}:
            raise invalid(at, "expected {mcp: {server, include?, exclude?}} and nothing else")
        server = servers.get(spec.get("server"))
        if server is None:
            raise invalid(f"{at}/server", f"MCP server {spec.get('server')!r} is not defined in mcpServers "
                                          f"(known: {', '.join(sorted(servers)) or 'none'})")
        if any(existing.server is server for existing in sets):
            raise invalid(f"{at}/server", f"the tools of MCP server {server.name!r} are listed twice")
        include, exclude = spec.get("include"), spec.get("exclude") or []
        for key, names in (("include", include), ("exclude", exclude)):
            if names is not None and (not isinstance(names, list) or not all(isinstance(n, str) and n for n in names)):
                raise invalid(f"{at}/{key}", "expected a list of tool names")
        sets.append(McpToolSet(server=server, include=None if include is None else tuple(include),
                               exclude=tuple(exclude)))
    known = [(s.server.name, s.server.prefix, name) for s in sets for name in s.include or () if s.offers(name)]
    try:
        assign(known, taken=[tool.name for tool in tools])
    except WorkflowError as error:
        raise invalid(where, str(error)) from None
    return tuple(sets)


def _tools(raw: Any, ctx: CompileContext, where: str) -> tuple[AgentTool, ...]:
    from xflow_runtime.agent.schemas import compile_schema

    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise invalid(where, "expected a list of tools")
    tools: list[AgentTool] = []
    for i, item in enumerate(raw):
        at = f"{where}/{i}"
        if not isinstance(item, Mapping):
            raise invalid(at, "a tool must be an object")
        name = require(item, "name", at)
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise invalid(f"{at}/name", f"{name!r} must be 1-64 letters, digits, '_' or '-'")
        if any(tool.name == name for tool in tools):
            raise invalid(f"{at}/name", f"tool {name!r} is defined twice")
        parameters = item.get("parameters") or {"type": "object", "properties": {}}
        output = item.get("output")
        tools.append(AgentTool(
            name=name,
            description=str(item.get("description") or ""),
            parameters=compile_schema(parameters, f"{at}/parameters", ctx.base_dir),
            output=None if output is None else compile_schema(output, f"{at}/output", ctx.base_dir),
            execution=_execution(item.get("execution"), name, ctx, f"{at}/execution"),
            metadata=dict(item.get("metadata") or {}),
        ))
    return tuple(tools)


#: What a supervisor's model sends a collaborator (specs/states-human.md §8).
COLLABORATOR_PARAMETERS = {"type": "object", "required": ["request"], "additionalProperties": False,
                           "properties": {"request": {"type": "string", "description": "What to do or answer"}}}


def _collaborator_tools(raw: Any) -> list[dict[str, Any]]:
    """``collaborators`` are tools bound to their sub-workflows, taking ``{request}``."""
    return [{"name": item.get("name"), "parameters": {"schema": COLLABORATOR_PARAMETERS},
             "description": item.get("description") or f"Delegate to the collaborator agent {item.get('name')}.",
             "execution": {"subFlowRef": item.get("subFlowRef")}}
            for item in raw or () if isinstance(item, Mapping)]


def _execution(raw: Any, tool_name: str, ctx: CompileContext, where: str) -> FunctionRef | SubFlowRef:
    """``execution: {functionRef: name | {refName, arguments}} | {subFlowRef: id | {workflowId, version}}``
    (our extension). Without it, a workflow function named like the tool is used."""
    from xflow_runtime.plan.actions import _function_ref, _subflow_ref  # noqa: PLC2701

    if raw is None:
        if tool_name in ctx.functions:
            return FunctionRef(function=ctx.functions[tool_name])
        raise invalid(where, f"tool {tool_name!r} needs 'execution: {{functionRef: …}}' or "
                             "'{subFlowRef: …}' (or a workflow function with the same name)")
    if not isinstance(raw, Mapping):
        raise invalid(where, "expected {functionRef: …} or {subFlowRef: …}")
    refs = [key for key in ("functionRef", "subFlowRef", "mcp") if raw.get(key) is not None]
    if len(refs) != 1:
        raise invalid(where, "needs exactly one of functionRef, subFlowRef, mcp")
    if refs[0] == "mcp":
        return _mcp_tool_ref(raw["mcp"], ctx, f"{where}/mcp")
    if refs[0] == "functionRef":
        return _function_ref(raw["functionRef"], ctx, f"{where}/functionRef")
    return _subflow_ref(raw["subFlowRef"], ctx, f"{where}/subFlowRef")


def _mcp_tool_ref(raw: Any, ctx: CompileContext, where: str) -> FunctionRef:
    """``execution: {mcp: {server, tool}}``: one MCP tool under the name the tool entry gives it,
    called like a ``type: mcp`` function."""
    from xflow_runtime.plan.functions import FunctionDef

    servers = ctx.extras.get("mcp_servers") or {}
    if not isinstance(raw, Mapping) or not isinstance(raw.get("tool"), str) or not raw["tool"]:
        raise invalid(where, "expected {server: <mcpServers name>, tool: <tool name>}")
    if raw.get("server") not in servers:
        raise invalid(f"{where}/server", f"MCP server {raw.get('server')!r} is not defined in mcpServers "
                                         f"(known: {', '.join(sorted(servers)) or 'none'})")
    operation = f"{raw['server']}#{raw['tool']}"
    return FunctionRef(function=FunctionDef(name=operation, type="mcp", operation=operation))


def compile_outcome(raw: Any, ctx: CompileContext, where: str,
                    variables: tuple[str, ...] = OUTCOME_VARIABLES) -> AgentOutcome:
    """One outcome of an agent state (``$agentOutcome`` bound) or a user task (``variables``)."""
    if not isinstance(raw, Mapping):
        raise invalid(where, "an outcome must be an object")
    finish = raw.get("finish")
    if finish is not None and not isinstance(finish, bool):
        raise invalid(f"{where}/finish", "expected true or false")
    exit_ = compile_exit(raw, ctx, where, required=False)
    if finish is False and exit_ is not None:
        raise invalid(where, "an outcome with finish: false keeps the conversation in this state, so its "
                             "transition would never be taken; set finish: true")
    # finish defaults to false, but an outcome that names where to go leaves the state: that is
    # how xFlow's own documentation writes outcomes (condition + transition, no finish).
    finish = bool(finish) or exit_ is not None
    filter_raw = raw.get("dataFilter")
    outcome_filter = OutcomeFilter()
    if filter_raw is not None:
        if not isinstance(filter_raw, Mapping):
            raise invalid(f"{where}/dataFilter", "expected an object {useData, data, toStateData}")
        outcome_filter = OutcomeFilter(
            use_data=_flag(filter_raw.get("useData", True)),
            data=ctx.expression(filter_raw.get("data"), f"{where}/dataFilter/data", extra_variables=variables),
            to_state_data=ctx.expression(filter_raw.get("toStateData"), f"{where}/dataFilter/toStateData",
                                         path=True, extra_variables=variables),
        )
    return AgentOutcome(
        condition=ctx.expression(raw.get("condition"), f"{where}/condition", extra_variables=variables),
        finish=finish, filter=outcome_filter, exit=exit_,
    )


def _memory(raw: Any, where: str) -> Any:
    from xflow_runtime.memory.chat.config import MemorySettings
    from xflow_runtime.memory.chat.errors import ChatMemoryError

    try:
        return MemorySettings.from_definition(raw)
    except (ChatMemoryError, ValueError, TypeError) as error:
        raise DefinitionError([f"{where}: {error}"]) from None


def _long_term(raw: Mapping[str, Any], where: str) -> Any:
    """``longTermMemory`` and ``factExtraction``, compiled once; ``None`` when neither is enabled
    (a state without them never imports :mod:`xflow_runtime.memory.longterm`)."""
    if raw.get("longTermMemory") is None and raw.get("factExtraction") is None:
        return None
    from xflow_runtime.memory.longterm.config import FactExtractionSettings, LongTermMemorySettings
    from xflow_runtime.memory.longterm.errors import LongTermMemoryError

    try:
        settings = (LongTermMemorySettings.from_definition(raw.get("longTermMemory")),
                    FactExtractionSettings.from_definition(raw.get("factExtraction")))
    except LongTermMemoryError as error:
        raise DefinitionError([f"{where}: {error}"]) from None
    if settings[0].enabled:
        from xflow_runtime.memory.longterm.tools import TOOL_NAMES

        for i, tool in enumerate(raw.get("tools") or ()):
            if isinstance(tool, Mapping) and tool.get("name") in TOOL_NAMES:
                raise invalid(f"{where}/tools/{i}/name", f"{tool['name']!r} is a long-term memory tool "
                                                         "(longTermMemory is enabled): rename this tool")
    return settings if settings[0].enabled or settings[1].enabled else None
