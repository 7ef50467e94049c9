"""Tolerant walkers over a (possibly schema-invalid) workflow document, yielding JSON pointers.

Lint runs even when the schema found problems, so every accessor accepts any shape and simply
yields nothing where the document is not what it should be.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol

from xflow_runtime.definition.source_map import join_pointer


class Reporter(Protocol):
    def __call__(self, pointer: str, message: str, code: str, *, severity: str | None = None,
                 prefer_key: bool = False) -> None: ...


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def enumerate_dicts(value: Any, pointer: str) -> Iterator[tuple[dict[str, Any], str]]:
    for index, item in enumerate(as_list(value)):
        if isinstance(item, dict):
            yield item, join_pointer(pointer, index)


def states(document: dict[str, Any]) -> Iterator[tuple[dict[str, Any], str]]:
    return enumerate_dicts(document.get("states"), "/states")


def state_names(document: dict[str, Any]) -> set[str]:
    return {s["name"] for s, _ in states(document) if isinstance(s.get("name"), str)}


def named(definitions: Any) -> set[str]:
    """Names of the items of a top-level definition list (functions, events, errors, retries)."""
    return {d["name"] for d, _ in enumerate_dicts(definitions, "") if isinstance(d.get("name"), str)}


@dataclass(frozen=True)
class Exit:
    """A way out of a state: a ``transition`` (to ``target``) or an ``end``.

    ``via`` says which field holds it (transition, condition, default, onErrors, outcome);
    ``value`` is the raw transition/end value, ``pointer`` where it is.
    """

    kind: str  # "transition" | "end"
    via: str
    value: Any
    pointer: str

    @property
    def target(self) -> str | None:
        if self.kind != "transition":
            return None
        if isinstance(self.value, str):
            return self.value
        next_state = as_dict(self.value).get("nextState")
        return next_state if isinstance(next_state, str) else None

    @property
    def target_pointer(self) -> str:
        return self.pointer if isinstance(self.value, str) else join_pointer(self.pointer, "nextState")


def exits(state: dict[str, Any], pointer: str) -> Iterator[Exit]:
    """Every transition and end a state declares, including those of conditions and outcomes."""
    yield from _exits_of(state, pointer, "transition")
    for field, via in (("dataConditions", "condition"), ("eventConditions", "condition"),
                       ("onErrors", "onErrors"), ("agentOutcomes", "outcome"), ("taskOutcomes", "outcome")):
        for item, item_pointer in enumerate_dicts(state.get(field), join_pointer(pointer, field)):
            yield from _exits_of(item, item_pointer, via)
    for field in ("onDelete", "onTimeout"):  # usertask
        if isinstance(state.get(field), dict):
            yield from _exits_of(state[field], join_pointer(pointer, field), field)
    default = state.get("defaultCondition")
    if isinstance(default, dict):
        yield from _exits_of(default, join_pointer(pointer, "defaultCondition"), "default")


def _exits_of(holder: dict[str, Any], pointer: str, via: str) -> Iterator[Exit]:
    if "transition" in holder and holder["transition"] is not None:
        yield Exit("transition", via, holder["transition"], join_pointer(pointer, "transition"))
    if "end" in holder and holder["end"] not in (None, False):
        yield Exit("end", via, holder["end"], join_pointer(pointer, "end"))


def actions(state: dict[str, Any], pointer: str) -> Iterator[tuple[dict[str, Any], str]]:
    """Every action of a state: operation/foreach actions, onEvents and branch actions, callback action."""
    yield from enumerate_dicts(state.get("actions"), join_pointer(pointer, "actions"))
    for holder_field in ("onEvents", "branches"):
        for holder, holder_pointer in enumerate_dicts(state.get(holder_field), join_pointer(pointer, holder_field)):
            yield from enumerate_dicts(holder.get("actions"), join_pointer(holder_pointer, "actions"))
    if isinstance(state.get("action"), dict):
        yield state["action"], join_pointer(pointer, "action")


def produce_events(exit_: Exit) -> Iterator[tuple[dict[str, Any], str]]:
    if isinstance(exit_.value, dict):
        yield from enumerate_dicts(exit_.value.get("produceEvents"), join_pointer(exit_.pointer, "produceEvents"))


def function_ref_name(ref: Any) -> str | None:
    if isinstance(ref, str):
        return ref
    name = as_dict(ref).get("refName")
    return name if isinstance(name, str) else None


def tool_bindings(state: dict[str, Any], pointer: str) -> Iterator[tuple[Any, str]]:
    """functionRefs that bind aiagent tools and agent-proxy executions to workflow functions."""
    for tool, tool_pointer in enumerate_dicts(state.get("tools"), join_pointer(pointer, "tools")):
        execution = as_dict(tool.get("execution"))
        if "functionRef" in execution:
            yield execution["functionRef"], join_pointer(tool_pointer, "execution", "functionRef")
    execution = as_dict(state.get("execution"))
    if "functionRef" in execution:
        yield execution["functionRef"], join_pointer(pointer, "execution", "functionRef")


def duplicates(items: list[tuple[dict[str, Any], str]], key: str = "name",
               on_duplicate: Callable[[str, str, str], None] | None = None) -> None:
    """Call ``on_duplicate(name, pointer, first_pointer)`` for every repeated ``key`` value."""
    first: dict[str, str] = {}
    for item, pointer in items:
        name = item.get(key)
        if not isinstance(name, str):
            continue
        if name in first and on_duplicate is not None:
            on_duplicate(name, join_pointer(pointer, key), first[name])
        first.setdefault(name, pointer)
