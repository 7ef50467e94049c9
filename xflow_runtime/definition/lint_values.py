"""Lint rules on values the schema only types as strings/numbers: durations (XF127), numCompleted (XF128).

Durations are checked with the plan compiler's own parser (``xflow_runtime.plan.durations``), so the
loader and the runtime agree on what ``PT30S`` means; the loader reports every bad one at once.
"""

from __future__ import annotations

from typing import Any, Iterator

from xflow_runtime.definition.source_map import join_pointer
from xflow_runtime.definition.walk import Reporter, actions, as_dict, enumerate_dicts, exits, states
from xflow_runtime.errors import DefinitionError

_TIMEOUT_FIELDS = ("stateExecTimeout", "actionExecTimeout", "branchExecTimeout", "eventTimeout",
                   "workflowExecTimeout")


def check_durations(document: dict[str, Any], report: Reporter) -> None:
    from xflow_runtime.plan.durations import parse_duration

    for pointer, value in duration_sites(document):
        if value is None or isinstance(value, (dict, list)):
            continue  # absent, or a shape the schema reports
        try:
            parse_duration(value)
        except DefinitionError as exc:
            reason = str(exc.diagnostics[0]).split(": ", 1)[-1] if exc.diagnostics else str(exc)
            report(pointer, reason, "XF127")


def duration_sites(document: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    yield from _timeouts(document.get("timeouts"), "/timeouts")
    for retry, pointer in enumerate_dicts(document.get("retries"), "/retries"):
        for field in ("delay", "maxDelay", "increment"):
            yield join_pointer(pointer, field), retry.get(field)
        if isinstance(retry.get("jitter"), str):  # a number is a fraction, a string a duration
            yield join_pointer(pointer, "jitter"), retry["jitter"]
    for state, pointer in states(document):
        if state.get("type") == "sleep":
            yield join_pointer(pointer, "duration"), state.get("duration")
        yield from _timeouts(state.get("timeouts"), join_pointer(pointer, "timeouts"))
        for branch, branch_pointer in enumerate_dicts(state.get("branches"), join_pointer(pointer, "branches")):
            yield from _timeouts(branch.get("timeouts"), join_pointer(branch_pointer, "timeouts"))
        for action, action_pointer in actions(state, pointer):
            sleep = as_dict(action.get("sleep"))
            for field in ("before", "after"):
                yield join_pointer(action_pointer, "sleep", field), sleep.get(field)
            yield (join_pointer(action_pointer, "eventRef", "resultEventTimeout"),
                   as_dict(action.get("eventRef")).get("resultEventTimeout"))
        for exit_ in exits(state, pointer):
            continue_as = as_dict(exit_.value).get("continueAs") if exit_.kind == "end" else None
            if isinstance(continue_as, dict):
                yield from _timeouts({"workflowExecTimeout": continue_as.get("workflowExecTimeout")},
                                     join_pointer(exit_.pointer, "continueAs"))


def _timeouts(value: Any, pointer: str) -> Iterator[tuple[str, Any]]:
    timeouts = as_dict(value)
    for field in _TIMEOUT_FIELDS:
        item = timeouts.get(field)
        at = join_pointer(pointer, field)
        if isinstance(item, dict):  # {single, total} or {duration, interrupt, runBefore}
            for key in ("single", "total", "duration"):
                yield join_pointer(at, key), item.get(key)
        else:
            yield at, item


def check_parallel(document: dict[str, Any], report: Reporter) -> None:
    """An ``atLeast`` parallel state must be able to complete: 1 ≤ numCompleted ≤ branches."""
    for state, pointer in states(document):
        if state.get("type") != "parallel" or state.get("completionType") != "atLeast":
            continue
        raw = state.get("numCompleted")
        branches = state.get("branches")
        count = _whole_number(raw)
        at = join_pointer(pointer, "numCompleted")
        if raw is None:
            report(pointer, "completionType atLeast needs numCompleted (how many branches must finish)", "XF128")
        elif count is None:
            report(at, f"numCompleted must be a whole number, found {raw!r}", "XF128")
        elif isinstance(branches, list) and not 1 <= count <= len(branches):
            report(at, f"numCompleted {count} must be between 1 and the number of branches ({len(branches)}); "
                   "otherwise the state can never complete", "XF128")


def _whole_number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None
