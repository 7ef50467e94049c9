"""Reading a parsed ``jsonpath-ng`` tree: Jayway's object filters, definite paths, path steps."""

from __future__ import annotations

from typing import Any

from jsonpath_ng.ext.filter import Filter
from jsonpath_ng.jsonpath import Child, DatumInContext, Fields, Index, Root, This


class ListIndex(Index):
    """An index selects nothing on anything but an array (jsonpath-ng raises KeyError on an object)."""

    def find(self, datum: Any) -> list[Any]:
        value = datum.value if isinstance(datum, DatumInContext) else datum
        return super().find(datum) if isinstance(value, list) else []


class ObjectFilter(Filter):
    """A filter that, on an object, tests the object itself (Jayway), and on an array its elements."""

    def find(self, datum: Any) -> list[Any]:
        datum = DatumInContext.wrap(datum)
        if isinstance(datum.value, dict):
            matched = all(expression.find(datum.value) for expression in self.expressions)
            return [datum] if matched else []
        return super().find(datum)


def jayway_tree(node: Any) -> Any:
    """The same tree with every :class:`Filter` replaced by an :class:`ObjectFilter` and every
    :class:`Index` by a :class:`ListIndex`."""
    if isinstance(node, Filter) and not isinstance(node, ObjectFilter):
        return ObjectFilter(node.expressions)
    if isinstance(node, Index) and not isinstance(node, ListIndex):
        return ListIndex(*node.indices)
    for attribute in ("left", "right"):
        child = getattr(node, attribute, None)
        if child is not None:
            setattr(node, attribute, jayway_tree(child))
    return node


def is_definite(node: Any) -> bool:
    """Names and single indexes only: the path selects at most one value."""
    return definite_steps(node) is not None


def definite_steps(node: Any) -> tuple[str | int, ...] | None:
    """``$.a.b[0]`` → ``("a", "b", 0)``; ``None`` when the path may select several values."""
    if isinstance(node, (Root, This)):
        return ()
    if isinstance(node, Child):
        left, right = definite_steps(node.left), definite_steps(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, Fields) and len(node.fields) == 1 and node.fields[0] != "*":
        return (node.fields[0],)
    if isinstance(node, Index) and len(node.indices) == 1 and isinstance(node.indices[0], int):
        return (node.indices[0],)
    return None
