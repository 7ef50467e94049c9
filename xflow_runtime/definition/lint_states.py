"""Lint rules about states and the edges between them (XF101–XF103, XF114–XF120, XF132)."""

from __future__ import annotations

import difflib
import re
from typing import Any, Callable

from xflow_runtime.definition.source_map import join_pointer
from xflow_runtime.definition.walk import (
    Reporter, as_dict, duplicates, enumerate_dicts, exits, state_names, states,
)

_SUSPICIOUS_NAME = re.compile(r"^\s|\s$|[\x00-\x1f\x7f]")
_DEFINITION_LISTS = ("functions", "events", "errors", "retries", "auth")


def did_you_mean(name: str, candidates: set[str]) -> str:
    close = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_names(document: dict[str, Any], report: Reporter) -> None:
    """XF102 duplicate states, XF115 duplicate definitions and tools, XF120 odd state names."""
    all_states = list(states(document))
    duplicates(all_states, on_duplicate=lambda name, pointer, first: report(
        pointer, f"duplicate state name {name!r} (first used at {first})", "XF102"))
    for field in _DEFINITION_LISTS:
        items = list(enumerate_dicts(document.get(field), "/" + field))
        duplicates(items, on_duplicate=_duplicate_definition(field, report))
    for state, pointer in all_states:
        tools = list(enumerate_dicts(state.get("tools"), join_pointer(pointer, "tools")))
        duplicates(tools, on_duplicate=lambda name, p, first: report(
            p, f"duplicate tool name {name!r} (first defined at {first})", "XF115"))
        name = state.get("name")
        if isinstance(name, str) and _SUSPICIOUS_NAME.search(name):
            report(join_pointer(pointer, "name"), f"state name {name!r} has surrounding whitespace or control "
                   "characters; transitions must repeat it exactly", "XF120")


def _duplicate_definition(field: str, report: Reporter) -> Callable[[str, str, str], None]:
    def on_duplicate(name: str, pointer: str, first: str) -> None:
        report(pointer, f"duplicate {field} name {name!r} (first defined at {first})", "XF115")
    return on_duplicate


def check_targets(document: dict[str, Any], report: Reporter) -> None:
    """XF101 transitions, XF103 start, XF114 runBefore all name existing states."""
    names = state_names(document)
    start = document.get("start")
    start_name, start_pointer = (start, "/start") if isinstance(start, str) else (
        as_dict(start).get("stateName"), "/start/stateName")
    if isinstance(start_name, str) and start_name not in names:
        report(start_pointer, f"start state {start_name!r} does not exist{did_you_mean(start_name, names)}", "XF103")
    for state, pointer in states(document):
        for exit_ in exits(state, pointer):
            target = exit_.target
            if target is not None and target not in names:
                report(exit_.target_pointer, f"transition target {target!r} is not a state of this workflow"
                       f"{did_you_mean(target, names)}", "XF101")
    run_before = as_dict(as_dict(document.get("timeouts")).get("workflowExecTimeout")).get("runBefore")
    if isinstance(run_before, str) and run_before not in names:
        report("/timeouts/workflowExecTimeout/runBefore", f"runBefore state {run_before!r} does not exist"
               f"{did_you_mean(run_before, names)}", "XF114")


def check_state_rules(document: dict[str, Any], report: Reporter) -> None:
    """XF116 mixed switch, XF117 foreach batchSize, XF118 self-transitions that can only loop."""
    for state, pointer in states(document):
        kind = state.get("type")
        if kind == "switch" and "dataConditions" in state and "eventConditions" in state:
            report(join_pointer(pointer, "eventConditions"), "a switch state has either dataConditions or "
                   "eventConditions, not both", "XF116", prefer_key=True)
        if kind == "foreach" and "batchSize" in state:
            _check_batch_size(state["batchSize"], join_pointer(pointer, "batchSize"), report)
        _check_self_transitions(state, pointer, report)
        for exit_ in exits(state, pointer):
            end = exit_.value if exit_.kind == "end" and isinstance(exit_.value, dict) else {}
            if "continueAs" in end and end.get("terminate") is False:
                report(join_pointer(exit_.pointer, "terminate"), "continueAs always terminates this instance; "
                       "terminate: false is ignored", "XF132", prefer_key=True)


def _check_batch_size(value: Any, pointer: str, report: Reporter) -> None:
    number: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and re.fullmatch(r"\s*-?\d+(\.\d+)?\s*", value):
        number = float(value)
    if number is not None and number < 1:
        report(pointer, f"batchSize {value!r} is below 1; expected a positive number of concurrent iterations",
               "XF117")


def _check_self_transitions(state: dict[str, Any], pointer: str, report: Reporter) -> None:
    """A data switch or inject state that returns to itself sees the same data and loops for ever.

    Self-loops stay legal where something can change between visits: an event switch (events),
    onErrors (a manual retry), agent outcomes (the conversation goes on), and every state that
    calls functions, waits or receives events (polling loops are a real pattern).
    """
    name = state.get("name")
    kind = state.get("type")
    if not isinstance(name, str):
        return
    is_data_switch = kind == "switch" and "eventConditions" not in state
    for exit_ in exits(state, pointer):
        if exit_.target != name or exit_.via in ("onErrors", "outcome"):
            continue
        if is_data_switch or kind == "inject":
            what = "a data-based switch" if is_data_switch else "an inject state"
            report(exit_.target_pointer, f"{what} that transitions to itself sees the same data every time and "
                   "loops for ever; route the loop through a state that changes the data", "XF118")
