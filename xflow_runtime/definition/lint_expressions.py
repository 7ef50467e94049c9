"""Lint rule: every jq expression compiles (XF121), names a place where it must (XF122).

Fields are of two kinds (``specs/definitions.md`` lists them; ``sw08-semantics.md`` §3.7 REC):

* always an expression — bare jq or ``${ … }``: filters, conditions, collections, expression
  functions' ``operation``, and the string form of event/continueAs ``data``;
* literal unless the whole (trimmed) string is ``${ … }``: function arguments (recursively),
  context attributes, auth properties, ``version``, agent messages, ``apiKey``, ``memoryId``.

``${ fn:name }`` is not jq: it names an expression function (XF125).
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from xflow_runtime.definition.source_map import join_pointer
from xflow_runtime.definition.walk import (
    Reporter, actions, as_dict, enumerate_dicts, exits, named, produce_events, states,
)
from xflow_runtime.errors import ExpressionError
from xflow_runtime.expressions import strip_expression
from xflow_runtime.expressions.language import JSONPATH, compile_in, is_marked_in

#: (pointer, value, always_expression, as_path, extra_variables)
Site = tuple[str, Any, bool, bool, tuple[str, ...]]

_AGENT = ("agentOutcome",)
_TASK = ("taskOutcome",)
_AGENT_FIELDS = ("systemMessage", "userMessage", "memory", "memoryId", "llmConfig", "relayMessage",
                 "agentOutcomes", "tools", "execution", "taskOutcomes")
_FUNCTION_CALL = re.compile(r"^fn:\s*(?P<name>\S+)$")
_SECRET_USE = re.compile(r"\$SECRETS\s*(?:\.\s*(?P<dot>[A-Za-z_][A-Za-z0-9_]*)|\[\s*\"(?P<key>[^\"]+)\"\s*\])")
#: path() is evaluated once on null to catch computed values; skip programs that might not stop.
_MAY_NOT_TERMINATE = re.compile(r"\b(def|repeat|while|until|recurse|range|limit|input|inputs)\b")


def check_expressions(document: dict[str, Any], report: Reporter) -> None:
    expression_functions = {f["name"] for f, _ in enumerate_dicts(document.get("functions"), "")
                            if isinstance(f.get("name"), str) and f.get("type") == "expression"}
    all_functions = named(document.get("functions"))
    secrets = document.get("secrets")
    declared_secrets = {s for s in secrets if isinstance(s, str)} if isinstance(secrets, list) else set()
    language = JSONPATH if document.get("expressionLang") == JSONPATH else "jq"
    scopes = _iteration_scopes(document)
    every_param = tuple(dict.fromkeys(scopes.values()))
    for pointer, value, always, as_path, extra in expression_sites(document):
        if not isinstance(value, str):
            continue
        if pointer.startswith("/functions/"):  # compiled where a foreach action calls it, too
            extra = extra + every_param
        else:
            extra = extra + tuple(param for prefix, param in scopes.items() if pointer.startswith(prefix))
        if not always and not is_marked_in(language, value):
            if "${" in value:
                report(pointer, f"{_shorten(value)!r} is used as literal text: here only a string that is "
                       "entirely ${ … } is an expression (build text inside jq: '${ \"Hi \" + .name }')",
                       "XF129", severity="warning")
            elif language == "jq" and _looks_like_jq(value, extra):
                report(pointer, f"{_shorten(value)!r} is used as literal text here, but SonataFlow would evaluate "
                       f"it as jq; write '${{ {value.strip()} }}' to evaluate it", "XF149")
            continue
        body = _strip(language, value)
        call = _FUNCTION_CALL.match(body)
        if call:
            name = call.group("name")
            if name not in expression_functions:
                kind = "is not of type 'expression'" if name in all_functions else "is not defined"
                report(pointer, f"${{ fn:{name} }} names function {name!r}, which {kind}", "XF125")
            continue
        if not body:
            report(pointer, "empty expression; expected a jq program", "XF121")
            continue
        try:
            compiled = compile_in(language, body, extra_variables=extra, as_path=as_path)
        except ExpressionError as exc:
            report(pointer, str(exc), "XF121")
            continue
        if as_path and not _MAY_NOT_TERMINATE.search(body):
            _check_path(compiled, body, pointer, report)
        for match in _SECRET_USE.finditer(body):
            secret = match.group("dot") or match.group("key")
            if secret not in declared_secrets:
                report(pointer, f"$SECRETS.{secret} is used but {secret!r} is not listed in secrets",
                       "XF126", severity="warning")


def _looks_like_jq(value: str, extra: tuple[str, ...]) -> bool:
    """A literal SonataFlow would evaluate: a path or variable use (``.name``, ``$WORKFLOW.instanceId``)
    that compiles as jq. Plain words, sentences and numbers are not flagged."""
    text = value.strip()
    if len(text) < 2 or not (text.startswith("$") or (text.startswith(".") and not text[1].isdigit())):
        return False
    try:
        compile_in("jq", text, extra_variables=extra)
    except ExpressionError:
        return False
    return True


def _strip(language: str, value: str) -> str:
    if language == JSONPATH:
        from xflow_runtime.expressions.jsonpath_expressions import strip_jsonpath

        return strip_jsonpath(value)
    return strip_expression(value)


def _iteration_scopes(document: dict[str, Any]) -> dict[str, str]:
    """Pointer prefix of each foreach state's actions → its ``iterationParam`` (a variable there)."""
    scopes = {}
    for state, pointer in states(document):
        if state.get("type") == "foreach":
            param = state.get("iterationParam") or "item"
            if isinstance(param, str) and param.isidentifier():
                scopes[join_pointer(pointer, "actions") + "/"] = param
    return scopes


def _shorten(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def _check_path(compiled: Any, body: str, pointer: str, report: Reporter) -> None:
    try:
        compiled.path_in_process(None)  # no loop builtins (checked by the caller), on null
    except ExpressionError as exc:
        if "Invalid path expression" in str(exc):
            report(pointer, f"{body!r} does not name a location in the data (it computes a value); "
                   "expected a path such as .result or .items[0]", "XF122")


def expression_sites(document: dict[str, Any]) -> Iterator[Site]:
    """Every place an expression may be written, with how to compile it."""
    yield from _literal_tree("/version", document.get("version"))
    for function, pointer in enumerate_dicts(document.get("functions"), "/functions"):
        if function.get("type") == "expression":
            yield join_pointer(pointer, "operation"), function.get("operation"), True, False, ()
    for auth, pointer in enumerate_dicts(document.get("auth"), "/auth"):
        yield from _literal_tree(join_pointer(pointer, "properties"), auth.get("properties"))
    for state, pointer in states(document):
        yield from _state_sites(state, pointer)


def _state_sites(state: dict[str, Any], pointer: str) -> Iterator[Site]:
    at = lambda *tokens: join_pointer(pointer, *tokens)  # noqa: E731
    sdf = as_dict(state.get("stateDataFilter"))
    for field in ("input", "output"):
        if field in sdf:
            yield at("stateDataFilter", field), sdf[field], True, False, ()
    if "inputCollection" in state:
        yield at("inputCollection"), state["inputCollection"], True, False, ()
    if "outputCollection" in state:
        yield at("outputCollection"), state["outputCollection"], True, True, ()
    if isinstance(state.get("dataFilter"), str):
        yield at("dataFilter"), state["dataFilter"], True, False, ()
    for condition, condition_pointer in enumerate_dicts(state.get("dataConditions"), at("dataConditions")):
        yield join_pointer(condition_pointer, "condition"), condition.get("condition"), True, False, ()
    for holder_field in ("onEvents", "eventConditions"):
        for holder, holder_pointer in enumerate_dicts(state.get(holder_field), at(holder_field)):
            yield from _event_filter(holder.get("eventDataFilter"), join_pointer(holder_pointer, "eventDataFilter"))
    yield from _event_filter(state.get("eventDataFilter"), at("eventDataFilter"))
    for action, action_pointer in actions(state, pointer):
        yield from _action_sites(action, action_pointer)
    for exit_ in exits(state, pointer):
        for produced, produced_pointer in produce_events(exit_):
            yield from _data_and_attributes(produced, produced_pointer)
        continue_as = as_dict(exit_.value).get("continueAs") if exit_.kind == "end" else None
        if isinstance(continue_as, dict):
            yield from _payload(continue_as.get("data"), join_pointer(exit_.pointer, "continueAs", "data"))
    yield from _agent_sites(state, pointer)


def _action_sites(action: dict[str, Any], pointer: str) -> Iterator[Site]:
    if "condition" in action:
        yield join_pointer(pointer, "condition"), action["condition"], True, False, ()
    adf = as_dict(action.get("actionDataFilter"))
    for field in ("fromStateData", "results", "toStateData"):
        if field in adf:
            yield join_pointer(pointer, "actionDataFilter", field), adf[field], True, field == "toStateData", ()
    yield from _function_ref_sites(action.get("functionRef"), join_pointer(pointer, "functionRef"))
    event_ref = action.get("eventRef")
    if isinstance(event_ref, dict):
        yield from _data_and_attributes(event_ref, join_pointer(pointer, "eventRef"))


def _function_ref_sites(ref: Any, pointer: str) -> Iterator[Site]:
    if not isinstance(ref, dict):
        return
    arguments = ref.get("arguments")
    if isinstance(arguments, str):  # one expression for the whole value (SonataFlow; XF144)
        yield join_pointer(pointer, "arguments"), arguments, True, False, ()
    else:
        yield from _literal_tree(join_pointer(pointer, "arguments"), arguments)
    selection = ref.get("selectionSet")
    if isinstance(selection, str):  # GraphQL: each embedded ${ } is evaluated before the call
        for match in re.finditer(r"\$\{(?P<body>[^{}]*(?:\{[^{}]*\}[^{}]*)*)\}", selection):
            yield join_pointer(pointer, "selectionSet"), match.group("body"), True, False, ()


def _data_and_attributes(holder: dict[str, Any], pointer: str) -> Iterator[Site]:
    yield from _payload(holder.get("data"), join_pointer(pointer, "data"))
    yield from _literal_tree(join_pointer(pointer, "contextAttributes"), holder.get("contextAttributes"))


def _payload(value: Any, pointer: str) -> Iterator[Site]:
    """A string is an expression; an object is a literal payload with ``${ }`` leaves."""
    if isinstance(value, str):
        yield pointer, value, True, False, ()
    else:
        yield from _literal_tree(pointer, value)


def _event_filter(value: Any, pointer: str, extra: tuple[str, ...] = ()) -> Iterator[Site]:
    edf = as_dict(value)
    for field in ("data", "toStateData"):
        if field in edf:
            yield join_pointer(pointer, field), edf[field], True, field == "toStateData", extra


def _agent_sites(state: dict[str, Any], pointer: str) -> Iterator[Site]:
    if not any(field in state for field in _AGENT_FIELDS):
        return
    at = lambda *tokens: join_pointer(pointer, *tokens)  # noqa: E731
    for field in ("systemMessage", "userMessage"):
        yield at(field), state.get(field), False, False, ()
    yield at("memory", "memoryId"), as_dict(state.get("memory")).get("memoryId"), False, False, ()
    if "memoryId" in state:
        yield at("memoryId"), state.get("memoryId"), False, False, ()
    yield from _api_keys(state.get("llmConfig"), at("llmConfig"))
    relay = as_dict(state.get("relayMessage"))
    yield at("relayMessage", "text"), relay.get("text"), False, False, ()
    yield at("relayMessage", "mediaExp"), relay.get("mediaExp"), True, False, ()
    for outcome, outcome_pointer in enumerate_dicts(state.get("agentOutcomes"), at("agentOutcomes")):
        yield join_pointer(outcome_pointer, "condition"), outcome.get("condition"), True, False, _AGENT
        yield from _event_filter(outcome.get("dataFilter"), join_pointer(outcome_pointer, "dataFilter"), _AGENT)
    for outcome, outcome_pointer in enumerate_dicts(state.get("taskOutcomes"), at("taskOutcomes")):
        yield join_pointer(outcome_pointer, "condition"), outcome.get("condition"), True, False, _TASK
        yield from _event_filter(outcome.get("dataFilter"), join_pointer(outcome_pointer, "dataFilter"), _TASK)
    for tool, tool_pointer in enumerate_dicts(state.get("tools"), at("tools")):
        execution = as_dict(tool.get("execution"))
        yield from _function_ref_sites(execution.get("functionRef"),
                                       join_pointer(tool_pointer, "execution", "functionRef"))
    yield from _function_ref_sites(as_dict(state.get("execution")).get("functionRef"),
                                   at("execution", "functionRef"))


def _api_keys(config: Any, pointer: str) -> Iterator[Site]:
    if not isinstance(config, dict):
        return
    yield join_pointer(pointer, "apiKey"), config.get("apiKey"), False, False, ()
    for target, target_pointer in enumerate_dicts(config.get("targets"), join_pointer(pointer, "targets")):
        yield from _api_keys(target, target_pointer)


def _literal_tree(pointer: str, value: Any) -> Iterator[Site]:
    """Strings anywhere inside ``value``: expressions only when written as ``${ … }``."""
    if isinstance(value, str):
        yield pointer, value, False, False, ()
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _literal_tree(join_pointer(pointer, key), item)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _literal_tree(join_pointer(pointer, index), item)
