"""Lint rules: every reference to a function, event, retry or error resolves (XF104–XF108)."""

from __future__ import annotations

from typing import Any

from xflow_runtime.definition.lint_states import did_you_mean
from xflow_runtime.definition.source_map import join_pointer
from xflow_runtime.definition.walk import (
    Reporter, actions, as_dict, as_list, enumerate_dicts, exits, function_ref_name, named, produce_events,
    states, tool_bindings,
)


def check_references(document: dict[str, Any], report: Reporter) -> None:
    functions = _names_or_none(document, "functions")
    retries = _names_or_none(document, "retries")
    errors = _names_or_none(document, "errors")
    event_kinds = {e["name"]: e.get("kind", "consumed") for e, _ in enumerate_dicts(document.get("events"), "")
                   if isinstance(e.get("name"), str)}
    events = _EventChecker(event_kinds if _names_or_none(document, "events") is not None else None, report)

    def function(ref: Any, pointer: str) -> None:
        name = function_ref_name(ref)
        if functions is not None and name is not None and name not in functions:
            where = pointer if isinstance(ref, str) else join_pointer(pointer, "refName")
            report(where, f"function {name!r} is not defined in functions{did_you_mean(name, functions)}", "XF104")

    def error(name: Any, pointer: str) -> None:
        if errors is not None and isinstance(name, str) and name not in errors:
            report(pointer, f"error {name!r} is not defined in errors{did_you_mean(name, errors)}", "XF108")

    for state, pointer in states(document):
        for action, action_pointer in actions(state, pointer):
            if "functionRef" in action:
                function(action["functionRef"], join_pointer(action_pointer, "functionRef"))
            event_ref = as_dict(action.get("eventRef"))
            event_pointer = join_pointer(action_pointer, "eventRef")
            events.use(event_ref.get("triggerEventRef"), join_pointer(event_pointer, "triggerEventRef"), "produced")
            events.use(event_ref.get("resultEventRef"), join_pointer(event_pointer, "resultEventRef"), "consumed")
            retry = action.get("retryRef")
            if retries is not None and isinstance(retry, str) and retry not in retries:
                report(join_pointer(action_pointer, "retryRef"), f"retry strategy {retry!r} is not defined in "
                       f"retries{did_you_mean(retry, retries)}", "XF107")
            for field in ("retryableErrors", "nonRetryableErrors"):
                for index, name in enumerate(as_list(action.get(field))):
                    error(name, join_pointer(action_pointer, field, index))
        for ref, ref_pointer in tool_bindings(state, pointer):
            function(ref, ref_pointer)
        for tool, tool_pointer in enumerate_dicts(state.get("tools"), join_pointer(pointer, "tools")):
            name = tool.get("name")
            if functions is not None and "execution" not in tool and isinstance(name, str) and name not in functions:
                report(join_pointer(tool_pointer, "name"), f"tool {name!r} has no execution and no workflow function "
                       f"is named {name!r}; add execution: {{functionRef: …}} or {{subFlowRef: …}}", "XF104")
        for holder, holder_pointer in enumerate_dicts(state.get("onEvents"), join_pointer(pointer, "onEvents")):
            for index, name in enumerate(as_list(holder.get("eventRefs"))):
                events.use(name, join_pointer(holder_pointer, "eventRefs", index), "consumed")
        for condition, condition_pointer in enumerate_dicts(state.get("eventConditions"),
                                                            join_pointer(pointer, "eventConditions")):
            events.use(condition.get("eventRef"), join_pointer(condition_pointer, "eventRef"), "consumed")
        if state.get("type") == "callback":
            events.use(state.get("eventRef"), join_pointer(pointer, "eventRef"), "consumed")
        for handler, handler_pointer in enumerate_dicts(state.get("onErrors"), join_pointer(pointer, "onErrors")):
            error(handler.get("errorRef"), join_pointer(handler_pointer, "errorRef"))
            for index, name in enumerate(as_list(handler.get("errorRefs"))):
                error(name, join_pointer(handler_pointer, "errorRefs", index))
        for exit_ in exits(state, pointer):
            for produced, produced_pointer in produce_events(exit_):
                events.use(produced.get("eventRef"), join_pointer(produced_pointer, "eventRef"), "produced")


def _names_or_none(document: dict[str, Any], field: str) -> set[str] | None:
    """Defined names, or None when the section is malformed (the schema reports that instead)."""
    section = document.get(field)
    return named(section) if section is None or isinstance(section, list) else None


class _EventChecker:
    def __init__(self, kinds: dict[str, Any] | None, report: Reporter) -> None:
        self.kinds = kinds
        self.report = report

    def use(self, name: Any, pointer: str, wanted: str) -> None:
        if self.kinds is None or not isinstance(name, str):
            return
        if name not in self.kinds:
            self.report(pointer, f"event {name!r} is not defined in events{did_you_mean(name, set(self.kinds))}",
                        "XF105")
            return
        kind = self.kinds[name]
        if kind == "consumed" and wanted == "produced":  # SonataFlow ignores kind when producing
            self.report(pointer, f"event {name!r} is defined with kind 'consumed' but is produced here; produced "
                        "anyway (SonataFlow's behaviour); declare it with kind: produced (or a second, produced "
                        "definition)", "XF143")
        elif kind != wanted:
            use = "consumes" if wanted == "consumed" else "produces"
            self.report(pointer, f"this reference {use} event {name!r}, which is defined with kind {kind!r}; "
                        f"expected kind {wanted!r}", "XF106")
