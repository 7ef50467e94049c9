"""Lint rules about the flow graph: compensation (XF109–XF113) and reachability (XF119)."""

from __future__ import annotations

from collections import deque
from typing import Any

from xflow_runtime.definition.lint_states import did_you_mean
from xflow_runtime.definition.source_map import join_pointer
from xflow_runtime.definition.walk import Reporter, as_dict, exits, states


def _is_compensation(state: dict[str, Any]) -> bool:
    return state.get("usedForCompensation") is True


def check_compensation(document: dict[str, Any], report: Reporter) -> None:
    by_name = {s["name"]: s for s, _ in states(document) if isinstance(s.get("name"), str)}
    compensation = {name for name, s in by_name.items() if _is_compensation(s)}
    for state, pointer in states(document):
        target = state.get("compensatedBy")
        target_pointer = join_pointer(pointer, "compensatedBy")
        if isinstance(target, str):
            if target not in by_name:
                report(target_pointer, f"compensatedBy state {target!r} does not exist"
                       f"{did_you_mean(target, set(by_name))}", "XF109")
            elif target not in compensation:
                report(target_pointer, f"state {target!r} compensates another state, so it must set "
                       "usedForCompensation: true", "XF110")
            if _is_compensation(state):
                report(target_pointer, "a compensation state cannot itself be compensated (compensatedBy)", "XF113")
        for exit_ in exits(state, pointer):
            next_name = exit_.target
            if next_name is None or next_name not in by_name:
                continue
            if _is_compensation(state) and next_name not in compensation:
                report(exit_.target_pointer, f"compensation state transitions to {next_name!r}, which is not a "
                       "compensation state (usedForCompensation: true)", "XF112")
            elif not _is_compensation(state) and next_name in compensation:
                report(exit_.target_pointer, f"{next_name!r} is a compensation state; the main flow cannot "
                       "transition into it (it runs only through compensatedBy)", "XF111")
    start = start_state(document)
    if start in compensation:
        report("/start" if "start" in document else "/states/0", f"the start state {start!r} is a compensation "
               "state", "XF111")


def start_state(document: dict[str, Any]) -> str | None:
    start = document.get("start")
    if isinstance(start, str):
        return start
    if isinstance(start, dict) and isinstance(start.get("stateName"), str):
        return start["stateName"]
    first = next(states(document), None)
    return first[0].get("name") if first and isinstance(first[0].get("name"), str) else None


def check_reachability(document: dict[str, Any], report: Reporter) -> None:
    """Warn about states no path reaches from start, through transitions, runBefore or compensatedBy."""
    by_name = {s["name"]: (s, p) for s, p in states(document) if isinstance(s.get("name"), str)}
    roots = [start_state(document),
             as_dict(as_dict(document.get("timeouts")).get("workflowExecTimeout")).get("runBefore")]
    seen: set[str] = set()
    queue = deque(r for r in roots if isinstance(r, str) and r in by_name)
    while queue:
        name = queue.popleft()
        if name in seen:
            continue
        seen.add(name)
        state, pointer = by_name[name]
        nexts = [e.target for e in exits(state, pointer)] + [state.get("compensatedBy")]
        queue.extend(n for n in nexts if isinstance(n, str) and n in by_name and n not in seen)
    if not any(isinstance(r, str) and r in by_name for r in roots):
        return  # no valid start: XF103 already says so, listing every state again would be noise
    for name, (state, pointer) in by_name.items():
        if name not in seen:
            report(pointer, f"state {name!r} is unreachable: no transition from the start state leads to it",
                   "XF119", prefer_key=False)
