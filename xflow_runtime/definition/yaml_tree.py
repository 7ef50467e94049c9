"""Turn a composed YAML node tree into JSON values while recording where every value was written.

PyYAML's own constructor silently keeps the last of two equal keys and loses positions; building
the values ourselves lets us report duplicate keys, non-JSON values and non-string keys with their
line and column, and fill the :class:`SourceMap` in the same pass.
"""

from __future__ import annotations

import math
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor

from xflow_runtime.definition.diagnostics import Diagnostic
from xflow_runtime.definition.source_map import SourceMap, join_pointer

_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"
#: Alias expansion budget: a "billion laughs" document stops here instead of eating memory.
MAX_NODES = 1_000_000


class _ScalarConstructor(SafeConstructor):
    """Safe scalars, except timestamps stay text (JSON has no dates; `version: 2024-01-01`)."""

    def construct_yaml_timestamp(self, node: yaml.Node) -> str:  # type: ignore[override]
        return str(node.value)


_ScalarConstructor.add_constructor(  # type: ignore[type-var]  # the stubs bind the method type too narrowly
    "tag:yaml.org,2002:timestamp", _ScalarConstructor.construct_yaml_timestamp)


class _TooManyNodes(Exception):
    pass


class YamlTreeBuilder:
    def __init__(self, source_map: SourceMap) -> None:
        self.source_map = source_map
        self.diagnostics: list[Diagnostic] = []
        self._scalars = _ScalarConstructor()
        self._active: set[int] = set()
        self._count = 0

    def build(self, root: yaml.Node) -> Any:
        try:
            return self._node(root, "")
        except _TooManyNodes:
            self._report(root, "", f"YAML aliases expand to more than {MAX_NODES} values", "XF011")
            return None

    # -- internals -------------------------------------------------------------------------
    def _report(self, node: yaml.Node, pointer: str, message: str, code: str) -> None:
        mark = node.start_mark
        self.diagnostics.append(Diagnostic(self.source_map.file, mark.line + 1, mark.column + 1, pointer, message,
                                           "error", code))

    def _node(self, node: yaml.Node, pointer: str) -> Any:
        self._count += 1
        if self._count > MAX_NODES:
            raise _TooManyNodes
        self.source_map.values.setdefault(pointer, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, pointer)
        if id(node) in self._active:
            self._report(node, pointer, "recursive YAML alias: a value contains itself", "XF011")
            return None
        self._active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                if node.tag != _SEQ:
                    self._report(node, pointer, f"YAML tag {node.tag!r} has no JSON equivalent", "XF009")
                return [self._node(item, f"{pointer}/{i}") for i, item in enumerate(node.value)]
            if node.tag != _MAP:
                self._report(node, pointer, f"YAML tag {node.tag!r} has no JSON equivalent", "XF009")
            assert isinstance(node, yaml.MappingNode)  # noqa: S101 - scalar, sequence and mapping are all YAML has
            return self._mapping(node, pointer)
        finally:
            self._active.discard(id(node))

    def _scalar(self, node: yaml.ScalarNode, pointer: str) -> Any:
        try:
            value = self._scalars.construct_object(node)
        except ConstructorError as exc:
            self._report(node, pointer, f"unsupported YAML value: {exc.problem}", "XF009")
            return node.value
        if isinstance(value, float) and not math.isfinite(value):
            self._report(node, pointer, f"{node.value!r} (NaN/infinity) has no JSON equivalent", "XF009")
        elif isinstance(value, (bytes, bytearray)):
            self._report(node, pointer, "binary (!!binary) values have no JSON equivalent", "XF009")
            return node.value
        return value

    def _key(self, node: yaml.Node, pointer: str) -> str:
        if not isinstance(node, yaml.ScalarNode):
            self._report(node, pointer, "a mapping key must be a string, found a collection", "XF009")
            return f"<{type(node).__name__}>"
        value = self._scalar(node, pointer)
        if isinstance(value, str):
            return value
        hint = " (YAML 1.1 reads it as a boolean; quote it)" if isinstance(value, bool) else "; quote it"
        self._report(node, pointer, f"mapping key {node.value!r} is not a string{hint}", "XF009")
        return str(node.value)

    def _mapping(self, node: yaml.MappingNode, pointer: str) -> dict[str, Any]:
        result: dict[str, Any] = {}
        first_seen: dict[str, yaml.Node] = {}
        merges: list[yaml.Node] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                merges.append(value_node)
                continue
            key = self._key(key_node, pointer)
            child = join_pointer(pointer, key)
            if key in first_seen:
                line = first_seen[key].start_mark.line + 1
                self._report(key_node, child, f"duplicate key {key!r} (first defined on line {line})", "XF003")
                continue
            first_seen[key] = key_node
            self.source_map.keys.setdefault(child, (key_node.start_mark.line + 1, key_node.start_mark.column + 1))
            result[key] = self._node(value_node, child)
        for merge in merges:  # `<<: *anchor`: explicit keys win, earlier merges win over later ones
            sources = merge.value if isinstance(merge, yaml.SequenceNode) else [merge]
            for source in sources:
                if not isinstance(source, yaml.MappingNode):
                    self._report(source, pointer, "a '<<' merge key needs a mapping or a list of mappings", "XF009")
                    continue
                for key, value in self._mapping(source, pointer).items():
                    result.setdefault(key, value)
        return result
