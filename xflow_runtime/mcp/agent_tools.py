"""The MCP tools an ``aiagent`` offers during one state visit.

At the start of each visit, one recorded step per server, ``<visit>/mcp-tools:<server>``, lists
the server's tools (all pages). Its result, the snapshot of names, descriptions and schemas, is
what the model sees for the whole visit, and what a resumed visit sees again: the step is
answered from history, even if the server changed meanwhile (specs/mcp.md, "Durability"). The
names the model sees come from :func:`xflow_runtime.mcp.names.assign`; each call maps back to
``<server>#<tool>`` and runs as a ``type: mcp`` function (one recorded step per call).
"""

from __future__ import annotations

import functools
from typing import Any

from xflow_runtime.errors import WorkflowError
from xflow_runtime.interpreter import records
from xflow_runtime.interpreter.state_run import StateRun
from xflow_runtime.mcp import TOOL_NOT_FOUND
from xflow_runtime.mcp.names import assign
from xflow_runtime.agent.plan import AgentTool, AIAgentState
from xflow_runtime.plan.functions import FunctionDef
from xflow_runtime.plan.model import FunctionRef

#: History record of a tool a server listed with a schema nobody can validate against.


async def visit_tools(run: StateRun, state: AIAgentState, scope: str, taken: list[str]) -> dict[str, AgentTool]:
    """``{model-facing name: tool}`` of the state's ``{mcp: …}`` entries (empty without any)."""
    if not state.mcp_tools:
        return {}
    from xflow_runtime.mcp.calls import list_tools

    entries: list[tuple[str, str, str]] = []
    listed: dict[tuple[str, str], dict[str, Any]] = {}
    for tool_set in state.mcp_tools:
        server = tool_set.server
        snapshot = await run.port.run_step(f"{scope}/mcp-tools:{server.name}", functools.partial(list_tools, run, server))
        names = {tool["name"] for tool in snapshot}
        missing = [name for name in tool_set.include or () if name not in names]
        if missing:
            raise WorkflowError(f"agent '{state.agent_name}': MCP server {server.name!r} does not offer "
                                f"{', '.join(map(repr, missing))} (it offers {', '.join(sorted(names)) or 'nothing'})",
                                code=TOOL_NOT_FOUND, details={"server": server.name, "missing": missing})
        for tool in snapshot:
            if tool_set.offers(tool["name"]):
                entries.append((server.name, server.prefix, tool["name"]))
                listed[(server.name, tool["name"])] = tool
    tools: dict[str, AgentTool] = {}
    for name, (server_name, tool_name) in assign(entries, taken=taken).items():
        description = listed[(server_name, tool_name)]
        parameters = _schema(description.get("inputSchema"))
        if parameters is None:
            run.record(records.MCP_TOOL_SKIPPED, state=state.name, server=server_name, tool=tool_name,
                       reason="its inputSchema is not a valid JSON Schema")
            continue
        operation = f"{server_name}#{tool_name}"
        tools[name] = AgentTool(name=name, description=description.get("description") or "",
                                parameters=parameters, output=None,
                                execution=FunctionRef(function=FunctionDef(name=operation, type="mcp",
                                                                           operation=operation)))
    return tools


def _schema(raw: Any) -> Any:
    """A compiled ``inputSchema``; ``None`` when it is not a JSON Schema. Remote ``$ref``s are
    never fetched (jsonschema's default registry retrieves nothing)."""
    from jsonschema import exceptions, validators

    from xflow_runtime.agent.schemas import CompiledSchema

    if not isinstance(raw, dict):
        return None
    cls = validators.validator_for(raw, default=validators.Draft202012Validator)
    try:
        cls.check_schema(raw)
    except exceptions.SchemaError:
        return None
    return CompiledSchema(schema=raw, validator=cls(raw))
