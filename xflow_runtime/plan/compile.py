"""``compile_plan``: a loaded workflow document (a dict) → a frozen :class:`WorkflowPlan`.

The document is expected to be schema-valid with referenced files resolved inline (see
``xflow_runtime.definition.load_workflow``); this compiler still reports what it cannot compile
as :class:`~xflow_runtime.errors.DefinitionError` rather than failing later at run time.
"""

from __future__ import annotations

from typing import Any, Mapping

from xflow_runtime.errors import DefinitionError
from xflow_runtime.expressions import is_expression
from xflow_runtime.plan.actions import compile_exit, compile_on_errors, state_filter
from xflow_runtime.plan.context import CompileContext
from xflow_runtime.plan.durations import parse_duration
from xflow_runtime.plan.definitions import (
    as_list,
    compile_error_def,
    compile_event_def,
    compile_retry_def,
    compile_timeouts,
    compile_workflow_exec_timeout,
    invalid,
)
from xflow_runtime.plan.functions import compile_function_def
from xflow_runtime.plan.json_schemas import data_input_schema, output_schema
from xflow_runtime.plan.model import NO_TIMEOUTS
from xflow_runtime.plan.registry import known_state_types, state_compiler
from xflow_runtime.plan.states import State, WorkflowPlan
from xflow_runtime.plan.templates import compile_template


def compile_plan(document: Mapping[str, Any], *, base_dir: str | None = None,
                 source_name: str | None = None) -> WorkflowPlan:
    """Compile ``document`` once; the plan is immutable and shared by every instance.

    Every problem is a :class:`DefinitionError`. A document that skipped schema validation can hold
    shapes the compiler does not expect; those are reported as "malformed" at the state being
    compiled rather than as a Python traceback.
    """
    tracker: list[str] = [""]
    try:
        return _compile_plan(document, base_dir, source_name, tracker)
    except DefinitionError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
        where = tracker[0] or "/"
        raise DefinitionError([f"{where}: malformed workflow document ({type(exc).__name__}: {exc}); "
                               "check it with `xflow validate`"]) from None


def _compile_plan(document: Mapping[str, Any], base_dir: str | None, source_name: str | None,
                  tracker: list[str]) -> WorkflowPlan:
    if not isinstance(document, Mapping):
        raise DefinitionError([f"a workflow document must be an object, found {type(document).__name__}"])
    raw_states = document.get("states")
    if not isinstance(raw_states, list) or not raw_states:
        raise invalid("/states", "a workflow needs at least one state")
    names = [state.get("name") if isinstance(state, Mapping) else None for state in raw_states]
    seen: set[str] = set()
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise invalid(f"/states/{i}", "a state needs a 'name'")
        if name in seen:
            raise invalid(f"/states/{i}/name", f"state name {name!r} is used twice")
        seen.add(name)

    auth_defs: dict[str, Any] = {item["name"]: item for item in as_list(document.get("auth"), "/auth") if isinstance(item, Mapping)}
    functions = {}
    for i, raw in enumerate(as_list(document.get("functions"), "/functions")):
        function = compile_function_def(raw, auth_defs, base_dir)
        functions[function.name] = function
    mcp_servers = _mcp_servers(document, auth_defs, functions, base_dir)
    top_timeouts_raw = document.get("timeouts")
    if isinstance(top_timeouts_raw, str):
        raise invalid("/timeouts", "the timeouts reference was not resolved by the loader")
    ctx = CompileContext(
        functions=functions,
        events={d.name: d for d in (compile_event_def(raw, f"/events/{i}")
                                    for i, raw in enumerate(as_list(document.get("events"), "/events")))},
        errors={d.name: d for d in (compile_error_def(raw, f"/errors/{i}")
                                    for i, raw in enumerate(as_list(document.get("errors"), "/errors")))},
        retries={d.name: d for d in (compile_retry_def(raw, f"/retries/{i}")
                                     for i, raw in enumerate(as_list(document.get("retries"), "/retries")))},
        timeouts=compile_timeouts(top_timeouts_raw, "/timeouts", NO_TIMEOUTS),
        state_names=frozenset(seen),
        base_dir=base_dir,
        source_name=source_name,
        expression_lang=str(document.get("expressionLang", "jq")),
    )
    ctx.extras["mcp_servers"] = mcp_servers
    states = {}
    for i, raw in enumerate(raw_states):
        tracker[0] = f"/states/{i}"
        states[raw["name"]] = compile_state(raw, ctx, f"/states/{i}")
    tracker[0] = ""

    start = document.get("start")
    if isinstance(start, Mapping):
        start_name, schedule = start.get("stateName"), start.get("schedule")
    else:
        start_name, schedule = start, None
    start_name = ctx.state_name(start_name, "/start") if start_name is not None else str(names[0])

    wf_timeout = compile_workflow_exec_timeout(
        (top_timeouts_raw or {}).get("workflowExecTimeout"), "/timeouts/workflowExecTimeout")
    if wf_timeout and wf_timeout.run_before is not None:
        ctx.state_name(wf_timeout.run_before, "/timeouts/workflowExecTimeout/runBefore")
    for index, state in enumerate(states.values()):
        if state.compensated_by is not None:
            ctx.state_name(state.compensated_by, f"/states/{index}/compensatedBy")

    evaluation_timeout = (top_timeouts_raw or {}).get("evaluationTimeout")
    version = document.get("version")
    constants = document.get("constants") or {}
    if not isinstance(constants, Mapping):
        raise invalid("/constants", "constants must be an object (a URI must be resolved by the loader)")
    secrets = document.get("secrets") or ()
    if isinstance(secrets, str):
        raise invalid("/secrets", "the secrets reference was not resolved by the loader")
    return WorkflowPlan(
        id=document.get("id"), key=document.get("key"), name=document.get("name"),
        version=None if version is None or is_expression(version) else str(version),
        version_template=compile_template(version) if is_expression(version) else None,
        description=document.get("description"),
        spec_version=str(document.get("specVersion", "0.8")),
        start=start_name, states=states,
        functions=functions, events=ctx.events, errors=ctx.errors, retries=ctx.retries,
        constants=dict(constants), secrets=tuple(str(s) for s in secrets),
        workflow_exec_timeout=wf_timeout,
        keep_active=bool(document.get("keepActive", False)),
        auto_retries=bool(document.get("autoRetries", False)),
        evaluation_timeout=None if evaluation_timeout is None else parse_duration(
            evaluation_timeout, where="/timeouts/evaluationTimeout"),
        data_input_schema=data_input_schema(document.get("dataInputSchema"), base_dir),
        output_schema=output_schema(document.get("extensions"), base_dir),
        expression_lang=str(document.get("expressionLang", "jq")),
        annotations=tuple(document.get("annotations") or ()),
        tracks_previous_result=_mentions(document.get("functions"), "prevActionResult")
        or _mentions(raw_states, "prevActionResult"),
        metadata=dict(document.get("metadata") or {}),
        base_dir=base_dir, source_name=source_name, schedule=schedule, mcp_servers=mcp_servers,
    )


def _mcp_servers(document: Mapping[str, Any], auth_defs: Mapping[str, Any], functions: Mapping[str, Any],
                 base_dir: str | None) -> dict[str, Any]:
    """``mcpServers`` (our extension); every ``type: mcp`` function must name one of them. The
    MCP package is imported only by workflows that declare servers or mcp functions."""
    raw = document.get("mcpServers")
    mcp_functions = [function for function in functions.values() if function.type == "mcp"]
    if raw is None and not mcp_functions:
        return {}
    from xflow_runtime.mcp.config import compile_mcp_servers, split_operation

    servers = compile_mcp_servers(raw, auth_defs, base_dir=base_dir,
                                  language=str(document.get("expressionLang", "jq")))
    for function in mcp_functions:
        server, _ = split_operation(function.operation, function.name)
        if server not in servers:
            raise invalid("/functions", f"function {function.name!r}: MCP server {server!r} is not defined in "
                                        f"mcpServers (known: {', '.join(sorted(servers)) or 'none'})")
    return servers


def compile_state(raw: Mapping[str, Any], ctx: CompileContext, where: str) -> State:
    type_name = raw.get("type")
    compiler = state_compiler(type_name) if isinstance(type_name, str) else None
    if compiler is None:
        raise invalid(f"{where}/type", f"unknown state type {type_name!r} (known: {', '.join(known_state_types())})")
    switch = type_name == "switch"
    common: dict[str, Any] = {
        "name": raw["name"],
        "type": type_name,
        "id": raw.get("id"),
        "filter": state_filter(raw.get("stateDataFilter"), ctx, f"{where}/stateDataFilter"),
        "on_errors": compile_on_errors(raw.get("onErrors"), ctx, f"{where}/onErrors"),
        "exit": None if switch else compile_exit(
            raw, ctx, where, required=not raw.get("usedForCompensation") and type_name in _NEEDS_EXIT),
        "compensated_by": raw.get("compensatedBy"),
        "used_for_compensation": bool(raw.get("usedForCompensation", False)),
        "timeouts": compile_timeouts(raw.get("timeouts"), f"{where}/timeouts", ctx.timeouts),
        "metadata": dict(raw.get("metadata") or {}),
        "error_message": _error_message(raw.get("metadata"), ctx, f"{where}/metadata/errorMessage"),
    }
    ctx.where = where
    return compiler(dict(raw), ctx, common)


def _mentions(value: Any, word: str) -> bool:
    """Whether any string inside ``value`` contains ``word``."""
    if isinstance(value, str):
        return word in value
    if isinstance(value, Mapping):
        return any(_mentions(item, word) for item in value.values())
    if isinstance(value, list):
        return any(_mentions(item, word) for item in value)
    return False


def _error_message(metadata: Any, ctx: CompileContext, where: str) -> Any:
    text = metadata.get("errorMessage") if isinstance(metadata, Mapping) else None
    return ctx.expression(text, where) if isinstance(text, str) and text.strip() else None


# Built-in types must say where they go; extension types (aiagent) may route through outcomes.
_NEEDS_EXIT = frozenset({"operation", "sleep", "inject", "parallel", "foreach", "event", "callback"})
