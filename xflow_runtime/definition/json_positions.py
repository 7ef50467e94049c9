"""Positions of every value and key in a JSON text that :mod:`json` has already accepted.

:mod:`json` gives values but no positions and silently merges duplicate keys, so this scanner walks
the same text once more, recording where each value and key starts and reporting duplicates. It
relies on the text being valid JSON (it is only called after ``json.loads`` succeeded).
"""

from __future__ import annotations

import bisect
import json
import re

from xflow_runtime.definition.diagnostics import Diagnostic
from xflow_runtime.definition.source_map import SourceMap, join_pointer

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")


class JsonPositionScanner:
    def __init__(self, text: str, name: str) -> None:
        self.text = text
        self.source_map = SourceMap(name)
        self.diagnostics: list[Diagnostic] = []
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def scan(self) -> SourceMap:
        try:
            self._value(0, "")
        except (RecursionError, IndexError, AttributeError, ValueError):
            pass  # keep what was recorded: positions degrade to the nearest known ancestor
        return self.source_map

    def _position(self, index: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._line_starts, index)
        return line, index - self._line_starts[line - 1] + 1

    def _skip(self, index: int) -> int:
        return _WHITESPACE.match(self.text, index).end()  # type: ignore[union-attr]

    def _value(self, index: int, pointer: str) -> int:
        index = self._skip(index)
        self.source_map.values.setdefault(pointer, self._position(index))
        char = self.text[index]
        if char == "{":
            return self._object(index + 1, pointer)
        if char == "[":
            return self._array(index + 1, pointer)
        match = (_STRING if char == '"' else _SCALAR).match(self.text, index)
        return match.end()  # type: ignore[union-attr]

    def _object(self, index: int, pointer: str) -> int:
        index = self._skip(index)
        if self.text[index] == "}":
            return index + 1
        first_line: dict[str, int] = {}
        while True:
            index = self._skip(index)
            match = _STRING.match(self.text, index)
            key = json.loads(match.group())  # type: ignore[union-attr]
            child = join_pointer(pointer, key)
            line, column = self._position(index)
            if key in first_line:
                self.diagnostics.append(Diagnostic(self.source_map.file, line, column, child, f"duplicate key {key!r} "
                                                   f"(first defined on line {first_line[key]})", "error", "XF003"))
            else:
                first_line[key] = line
                self.source_map.keys.setdefault(child, (line, column))
            index = self._skip(match.end()) + 1  # type: ignore[union-attr]  # past ':'
            index = self._skip(self._value(index, child))
            if self.text[index] == "}":
                return index + 1
            index += 1  # past ','

    def _array(self, index: int, pointer: str) -> int:
        index = self._skip(index)
        if self.text[index] == "]":
            return index + 1
        position = 0
        while True:
            index = self._skip(self._value(index, f"{pointer}/{position}"))
            position += 1
            if self.text[index] == "]":
                return index + 1
            index += 1
