"""The Serverless Workflow 0.8 merge of results and event payloads into state data.

Rules (specs/data.md pins each one with a test):

1. target null or missing → the source.
2. object into object → recursive, key by key; at the leaves the source wins.
3. array into array → target elements first, then source elements not already present.
4. scalar into array → appended when not already present.
5. anything else → the source replaces the target.

Merging a non-object into the state-data root is decided by the caller (see
:func:`merge_at_path`), because it needs the action's name to apply the 0.9 rule.
Inputs are never mutated; the result shares unchanged subtrees with them.
"""

from __future__ import annotations

from typing import Any, Sequence


def merge(target: Any, source: Any) -> Any:
    if target is None:
        return source
    if isinstance(target, dict) and isinstance(source, dict):
        merged = dict(target)
        for key, value in source.items():
            merged[key] = merge(merged[key], value) if key in merged else value
        return merged
    if isinstance(target, list):
        if isinstance(source, list):
            result = list(target)
            for item in source:
                if item not in result:
                    result.append(item)
            return result
        if not isinstance(source, dict):
            return target if source in target else [*target, source]
    return source


def get_path(data: Any, path: Sequence[str | int]) -> Any:
    current = data
    for key in path:
        if isinstance(current, dict):
            current = current.get(key)
        elif isinstance(current, list) and isinstance(key, int) and -len(current) <= key < len(current):
            current = current[key]
        else:
            return None
    return current


def set_path(data: Any, path: Sequence[str | int], value: Any) -> Any:
    """Return a copy of ``data`` with ``value`` at ``path``, creating missing parents."""
    if not path:
        return value
    key, rest = path[0], path[1:]
    if isinstance(key, int):
        items = list(data) if isinstance(data, list) else []
        while len(items) <= key:
            items.append(None)
        items[key] = set_path(items[key], rest, value)
        return items
    container = dict(data) if isinstance(data, dict) else {}
    container[key] = set_path(container.get(key), rest, value)
    return container


def merge_at_path(data: Any, path: Sequence[str | int], source: Any) -> Any:
    """Merge ``source`` into the value found at ``path`` in ``data`` (created when missing)."""
    return set_path(data, path, merge(get_path(data, path), source))
