"""Read one file or text into a JSON value plus a :class:`SourceMap`, reporting problems, never raising.

YAML goes through libyaml's composer (fast, with marks) and :class:`YamlTreeBuilder`. JSON is
parsed by :mod:`json` (exact numbers, JSON's own error positions) and then scanned once more by
:class:`JsonPositionScanner` for positions and duplicate keys, which :mod:`json` would silently merge.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from xflow_runtime.definition.diagnostics import Diagnostic
from xflow_runtime.definition.json_positions import JsonPositionScanner
from xflow_runtime.definition.source_map import SourceMap, join_pointer
from xflow_runtime.definition.yaml_tree import YamlTreeBuilder

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class ParsedSource:
    """The outcome of reading one file: ``value`` is None when the text could not be parsed."""

    value: Any
    source_map: SourceMap
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(d.severity == "error" for d in self.diagnostics)


def read_path(path: Path, display_name: str) -> ParsedSource:
    try:
        data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return _failed(display_name, 0, 0, f"cannot read file: {reason}", "XF007")
    return parse_source(data, display_name, json_expected=path.suffix.lower() == ".json")


def parse_source(data: bytes | str, name: str, *, json_expected: bool = False) -> ParsedSource:
    """Parse YAML or JSON text. ``json_expected`` (a ``.json`` file) reports JSON's own errors."""
    if isinstance(data, bytes):
        text_or_failure = _decode(data, name)
        if isinstance(text_or_failure, ParsedSource):
            return text_or_failure
        text = text_or_failure
    else:
        text = data
    if "\x00" in text:
        line, column = _position_of(text, text.index("\x00"))
        return _failed(name, line, column, "the file contains NUL characters: it is not a text document", "XF006")
    if not text.strip():
        return _failed(name, 1, 1, "the document is empty; expected a workflow mapping", "XF005")
    if json_expected or text.lstrip().startswith(("{", "[")):
        return _parse_json(text, name, strict=json_expected)
    return _parse_yaml(text, name)


def _decode(data: bytes, name: str) -> str | ParsedSource:
    if b"\x00" in data[:4096] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return _failed(name, 0, 0, "the file contains NUL bytes: it is not a text document", "XF006")
    for bom, encoding in ((b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if data.startswith(bom):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError:
                break
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, column = _position_of(data[: exc.start].decode("utf-8", "replace"), exc.start)
        return _failed(name, line, column, f"the file is not UTF-8 text (byte 0x{data[exc.start]:02x} "
                                           f"at offset {exc.start})", "XF006")


def _parse_json(text: str, name: str, *, strict: bool) -> ParsedSource:
    def reject_constant(token: str) -> Any:
        raise ValueError(f"{token} is not valid JSON")

    def first_key_wins(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, item in pairs:  # as for YAML: the first of two equal keys is kept (and XF003 reported)
            result.setdefault(key, item)
        return result

    try:
        value = json.loads(text, parse_constant=reject_constant, object_pairs_hook=first_key_wins)
    except json.JSONDecodeError as exc:
        if not strict:  # text starting with '{' may still be YAML flow style
            return _parse_yaml(text, name)
        return _failed(name, exc.lineno, exc.colno, f"invalid JSON: {exc.msg}", "XF002")
    except ValueError as exc:
        return _failed(name, 1, 1, f"invalid JSON: {exc}", "XF002")
    except RecursionError:
        return _failed(name, 1, 1, "the JSON is nested too deeply", "XF011")
    scanner = JsonPositionScanner(text.lstrip("\ufeff"), name)
    source_map = scanner.scan()
    found = list(scanner.diagnostics)
    found.extend(Diagnostic(name, *source_map.locate(pointer), pointer, "number too large: it does not fit a "
                            "64-bit float", "error", "XF009") for pointer in _infinite(value, ""))
    return ParsedSource(value, source_map, found)


def _infinite(value: Any, pointer: str) -> list[str]:
    """Pointers of numbers like 1e400 that JSON parsing turned into infinity."""
    if isinstance(value, float) and not math.isfinite(value):
        return [pointer]
    items: list[tuple[str | int, Any]]
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    else:
        return []
    return [found for key, item in items for found in _infinite(item, join_pointer(pointer, key))]


def _parse_yaml(text: str, name: str) -> ParsedSource:
    source_map = SourceMap(name)
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        return ParsedSource(None, source_map, [_yaml_error(exc, text, name)])
    except yaml.YAMLError as exc:
        return _failed(name, 1, 1, f"invalid YAML: {exc}", "XF001")
    except RecursionError:
        return _failed(name, 1, 1, "the YAML is nested too deeply", "XF011")
    if root is None:
        return _failed(name, 1, 1, "the document is empty; expected a workflow mapping", "XF005")
    builder = YamlTreeBuilder(source_map)
    try:
        value = builder.build(root)
    except RecursionError:
        return _failed(name, 1, 1, "the YAML is nested too deeply", "XF011")
    return ParsedSource(value, source_map, builder.diagnostics)


def _yaml_error(exc: yaml.MarkedYAMLError, text: str, name: str) -> Diagnostic:
    mark = exc.problem_mark or exc.context_mark
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    problem = exc.problem or "invalid YAML"
    if "expected a single document" in (exc.context or ""):
        return Diagnostic(name, line, column, "", "the file holds several YAML documents (---); "
                          "expected exactly one workflow", "error", "XF010")
    offending = _char_at(text, line, column)
    if offending == "\t" or "tab" in problem:
        return Diagnostic(name, line, column, "", "tab character where YAML expects spaces; indent with spaces",
                          "error", "XF004")
    problem = problem.replace("character that", f"character {offending!r} that") if offending else problem
    context = f" ({exc.context})" if exc.context else ""
    return Diagnostic(name, line, column, "", f"invalid YAML: {problem}{context}", "error", "XF001")


def _char_at(text: str, line: int, column: int) -> str:
    lines = text.split("\n")
    if 1 <= line <= len(lines) and 1 <= column <= len(lines[line - 1]):
        return lines[line - 1][column - 1]
    return ""


def _position_of(text: str, index: int) -> tuple[int, int]:
    before = text[:index]
    return before.count("\n") + 1, index - (before.rfind("\n") + 1) + 1


def _failed(name: str, line: int, column: int, message: str, code: str) -> ParsedSource:
    return ParsedSource(None, SourceMap(name), [Diagnostic(name, line, column, "", message, "error", code)])
