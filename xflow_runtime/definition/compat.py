"""SonataFlow relaxations: what SonataFlow accepts and strict SW 0.8 does not, accepted visibly.

Each relaxation has its own code (XF140–XF147, ``specs/compat-sonataflow.md``): a warning by
default, an error in strict mode (``xflow validate --strict``, ``Runtime(strict=True)``). Two
kinds of work happen here:

* :func:`normalize` runs **before** the schema check and rewrites values that have an exact
  strict form: a missing ``specVersion`` becomes ``"0.8"``, a string boolean (``"true"``) becomes a
  boolean, an ignored ``functionRef.name`` is dropped.
* :func:`accept_findings` runs **after** it: the schema findings that are SonataFlow shapes the
  plan understands (a switch without ``defaultCondition``, an ``eventRef`` without
  ``resultEventRef``, ``arguments`` as one expression string, a consumed event without ``source``)
  are replaced by their relaxation diagnostic.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from xflow_runtime.definition.schema_errors import Finding
from xflow_runtime.definition.source_map import join_pointer
from xflow_runtime.definition.walk import Reporter, actions, as_dict, enumerate_dicts, exits, states
from xflow_runtime.errors import NO_CONDITION_MATCHED

#: Codes whose severity is "warning" by default and "error" in strict mode.
RELAXATION_CODES = frozenset({"XF140", "XF141", "XF142", "XF143", "XF144", "XF145", "XF146", "XF147"})

_BOOLEAN_STATE_FIELDS = ("usedForCompensation", "exclusive")
_BOOLEAN_EXIT_FIELDS = ("terminate", "compensate")
_BOOLEAN_TOP_FIELDS = ("keepActive", "autoRetries")
_STRING_BOOLEANS = {"true": True, "false": False}


def normalize(document: dict[str, Any], report: Reporter) -> None:
    """Rewrite the relaxed forms that have an exact strict equivalent, reporting each."""
    if "specVersion" not in document:
        document["specVersion"] = "0.8"
        report("", "specVersion is missing; read as '0.8' (SonataFlow's default); write specVersion: '0.8'",
               "XF140", prefer_key=True)
    for holder, key, pointer in _boolean_sites(document):
        value = holder[key]
        if isinstance(value, str) and value.strip().lower() in _STRING_BOOLEANS:
            holder[key] = _STRING_BOOLEANS[value.strip().lower()]
            report(pointer, f"{value!r} is a string; read as the boolean {holder[key]!s} (SonataFlow "
                   f"accepts this); write {key}: {str(holder[key]).lower()} without quotes", "XF145")
    for state, pointer in states(document):
        for action, action_pointer in actions(state, pointer):
            ref = action.get("functionRef")
            if isinstance(ref, dict) and "name" in ref and "refName" in ref:
                ref.pop("name")
                report(join_pointer(action_pointer, "functionRef", "name"), "functionRef has no 'name' in SW 0.8; "
                       "SonataFlow ignores it and so do we (name the action instead: actions[].name)", "XF147",
                       prefer_key=True)


def _boolean_sites(document: dict[str, Any]) -> Iterator[tuple[dict[str, Any], str, str]]:
    """(holder, key, pointer) of every structural field whose value must be a boolean."""
    for key in _BOOLEAN_TOP_FIELDS:
        if key in document:
            yield document, key, join_pointer("", key)
    for event, pointer in enumerate_dicts(document.get("events"), "/events"):
        if "dataOnly" in event:
            yield event, "dataOnly", join_pointer(pointer, "dataOnly")
    for state, pointer in states(document):
        for key in _BOOLEAN_STATE_FIELDS:
            if key in state:
                yield state, key, join_pointer(pointer, key)
        for holder, holder_pointer in _exit_holders(state, pointer):
            if isinstance(holder.get("end"), str):
                yield holder, "end", join_pointer(holder_pointer, "end")
        for exit_ in exits(state, pointer):
            if isinstance(exit_.value, dict):
                for key in _BOOLEAN_EXIT_FIELDS:
                    if key in exit_.value:
                        yield exit_.value, key, join_pointer(exit_.pointer, key)
        for action, action_pointer in actions(state, pointer):
            adf = as_dict(action.get("actionDataFilter"))
            if "useResults" in adf:
                yield adf, "useResults", join_pointer(action_pointer, "actionDataFilter", "useResults")
        for holder_field in ("onEvents", "eventConditions"):
            for holder, holder_pointer in enumerate_dicts(state.get(holder_field), join_pointer(pointer, holder_field)):
                edf = as_dict(holder.get("eventDataFilter"))
                if "useData" in edf:
                    yield edf, "useData", join_pointer(holder_pointer, "eventDataFilter", "useData")


def _exit_holders(state: dict[str, Any], pointer: str) -> Iterator[tuple[dict[str, Any], str]]:
    """The state and every part of it that may hold its own ``end``."""
    yield state, pointer
    for field in ("dataConditions", "eventConditions", "onErrors"):
        yield from enumerate_dicts(state.get(field), join_pointer(pointer, field))
    if isinstance(state.get("defaultCondition"), dict):
        yield state["defaultCondition"], join_pointer(pointer, "defaultCondition")


_MISSING = re.compile(r"^missing required property '(?P<name>\w+)'")


def accept_findings(findings: list[Finding], document: dict[str, Any], report: Reporter) -> list[Finding]:
    """The schema findings left once the SonataFlow shapes are reported as relaxations."""
    kept = []
    for finding in findings:
        relaxation = _relaxation(finding, document)
        if relaxation is None:
            kept.append(finding)
        else:
            code, message = relaxation
            report(finding[0], message, code, prefer_key=finding[3])
    return kept


def _relaxation(finding: Finding, document: dict[str, Any]) -> tuple[str, str] | None:
    pointer, message, code, _ = finding
    missing = _MISSING.match(message) if code == "XF052" else None
    name = missing.group("name") if missing else None
    if name == "defaultCondition" and _at(document, pointer).get("type") == "switch":
        return "XF141", (f"a switch without defaultCondition fails with code '{NO_CONDITION_MATCHED}' when no "
                         "condition matches (SonataFlow's behaviour); add defaultCondition: {transition: …} or "
                         "{end: true}")
    if name == "resultEventRef" and pointer.endswith("/eventRef"):
        return "XF142", ("an eventRef without resultEventRef produces its trigger event and goes on without "
                         "waiting (SonataFlow's behaviour); strict 0.8 needs resultEventRef (with invoke: async "
                         "to not wait)")
    if name == "source" and re.fullmatch(r"/events/\d+", pointer):
        return "XF146", ("a consumed event without source matches events of its type from any source "
                         "(SonataFlow's behaviour); add source: …")
    if code == "XF053" and pointer.endswith("/functionRef/arguments") and message.startswith("found string"):
        return "XF144", ("arguments given as one expression string: its result is the whole argument value "
                         "(SonataFlow's behaviour); strict 0.8 wants an object, e.g. {x: '${ .x }'}")
    return None


def _at(document: dict[str, Any], pointer: str) -> dict[str, Any]:
    node: Any = document
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) and token.isdigit() and int(token) < len(node) \
            else as_dict(node).get(token)
    return as_dict(node)


def check_jvm_functions(document: dict[str, Any], report: Reporter) -> None:
    """XF148: a SonataFlow function that needs the JVM validates, with how to run it here instead."""
    from xflow_runtime.plan.functions import jvm_only_operation, python_implementation_hint

    for function, pointer in enumerate_dicts(document.get("functions"), "/functions"):
        name, operation = function.get("name"), function.get("operation")
        if isinstance(name, str) and jvm_only_operation(function.get("type", "rest"), operation):
            report(join_pointer(pointer, "operation"), f"operation {operation!r} runs inside SonataFlow's JVM; "
                   f"calling it here fails with FunctionNotFound unless you {python_implementation_hint(name)}",
                   "XF148")


def severity_for(code: str, strict: bool) -> str | None:
    """The severity a relaxation is reported with (``None`` for every other code: its own)."""
    if code not in RELAXATION_CODES:
        return None
    return "error" if strict else "warning"


__all__: list[str] = ["RELAXATION_CODES", "accept_findings", "check_jvm_functions", "normalize", "severity_for"]
