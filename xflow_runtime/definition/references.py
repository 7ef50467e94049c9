"""Replace top-level fields given as a URI (``functions: defs/functions.yaml``) by the file's content.

Relative paths and ``file://`` URIs resolve against the workflow document's folder. ``http(s)``
references are refused with a diagnostic: the loader never touches the network (decision in
``specs/definitions.md``). Each loaded file is mounted on the :class:`DocumentMap`, so problems
found later inside it are reported in that file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from urllib.parse import unquote, urlsplit

from xflow_runtime.definition.diagnostics import Diagnostic
from xflow_runtime.definition.reader import ParsedSource, read_path
from xflow_runtime.definition.source_map import DocumentMap

#: fields whose URI form names a file shaped ``{<field>: [...]}`` (a bare list is accepted too).
LIST_FIELDS = ("functions", "events", "retries", "errors", "auth", "secrets")
#: fields whose URI form names a file holding an object (optionally wrapped as ``{<field>: {...}}``).
OBJECT_FIELDS = ("constants", "timeouts")


@dataclass(frozen=True)
class ReferenceContext:
    base_dir: Path
    display_dir: str  # how the workflow file's folder is shown in diagnostics
    document_map: DocumentMap
    report: Callable[[Diagnostic], None]
    cache: dict[Path, ParsedSource]


def resolve_references(document: dict[str, Any], context: ReferenceContext) -> None:
    """Inline every list/object field given as a URI. ``dataInputSchema`` is handled separately."""
    for name in LIST_FIELDS + OBJECT_FIELDS:
        uri = document.get(name)
        if not isinstance(uri, str):
            continue
        loaded = load_reference(uri, "/" + name, context)
        if loaded is None:
            continue
        parsed, shown = loaded
        content, inner_pointer = _unwrap(parsed.value, name, only_key=name in OBJECT_FIELDS)
        wanted = list if name in LIST_FIELDS else dict
        if not isinstance(content, wanted):
            what = "a list" if wanted is list else "a mapping"
            line, column = parsed.source_map.locate(inner_pointer)
            context.report(Diagnostic(shown, line, column, inner_pointer,
                                      f"found {_kind(content)}, expected {what} of {name} "
                                      f"(or a mapping {{{name}: …}})", "error", "XF022"))
            continue
        document[name] = content
        context.document_map.mount("/" + name, parsed.source_map, inner_pointer)


def resolve_data_input_schema(document: dict[str, Any], context: ReferenceContext) -> None:
    """Load the JSON Schema named by ``dataInputSchema`` and store it inline (object form)."""
    field = document.get("dataInputSchema")
    if isinstance(field, str):
        uri, fail, pointer = field, True, "/dataInputSchema"
    elif isinstance(field, dict) and isinstance(field.get("schema"), str):
        uri, fail, pointer = field["schema"], field.get("failOnValidationErrors", True), "/dataInputSchema/schema"
    else:
        return
    loaded = load_reference(uri, pointer, context)
    if loaded is None:
        return
    parsed, shown = loaded
    problem = _schema_problem(parsed.value)
    if problem is not None:
        context.report(Diagnostic(shown, *parsed.source_map.locate(problem[0]), problem[0],
                                  f"not a valid JSON Schema: {problem[1]}", "error", "XF022"))
        return
    from xflow_runtime.plan.json_schemas import anchor_refs

    # Relative $refs inside the file resolve against its own folder, not the workflow's.
    schema = anchor_refs(parsed.value, _schema_folder(uri, context.base_dir))
    document["dataInputSchema"] = {"schema": schema, "failOnValidationErrors": fail}
    context.document_map.mount("/dataInputSchema/schema", parsed.source_map, "")


def _schema_folder(uri: str, base_dir: Path) -> Path:
    target = uri.strip().split("#", 1)[0]
    if target.lower().startswith("file://"):
        target = unquote(target[len("file://"):])
    return (Path(target) if os.path.isabs(target) else base_dir / target).resolve().parent


def load_reference(uri: str, pointer: str, context: ReferenceContext) -> tuple[ParsedSource, str] | None:
    """Read the file ``uri`` names; report and return None when that is impossible."""
    file, _, position = context.document_map.resolve(pointer)

    def fail(message: str, code: str) -> None:
        context.report(Diagnostic(file, position[0], position[1], pointer, message, "error", code))

    lowered = uri.strip().lower()
    if lowered.startswith(("http://", "https://")):
        fail(f"remote reference {uri!r} is not fetched (the loader works offline); "
             "download the file and reference it by a relative path", "XF021")
        return None
    target = uri.strip().split("#", 1)[0]
    if lowered.startswith("file://"):
        target = unquote(target[len("file://"):])  # file:///my%20dir/defs.yaml
    elif len(urlsplit(target).scheme) > 1:  # one letter is a Windows drive, not a scheme
        fail(f"unsupported URI {uri!r}; expected a relative path or a file:// URI", "XF020")
        return None
    if not target:
        fail("empty reference; expected a file path", "XF020")
        return None
    path = Path(target) if os.path.isabs(target) else context.base_dir / target
    shown = target if os.path.isabs(target) else os.path.normpath(os.path.join(context.display_dir, target))
    if not path.is_file():
        fail(f"referenced file {target!r} not found (looked for {path})", "XF020")
        return None
    parsed = context.cache.get(path)
    if parsed is None:
        parsed = read_path(path, shown)
        context.cache[path] = parsed
        for diagnostic in parsed.diagnostics:
            context.report(diagnostic)
    if parsed.value is None:
        if parsed.ok:  # e.g. `null` as the whole file
            fail(f"referenced file {target!r} holds no value", "XF022")
        return None
    return parsed, shown


def _unwrap(value: Any, name: str, *, only_key: bool) -> tuple[Any, str]:
    # An object field's file may itself have a key named like the field, so unwrap only when
    # that key is alone; a list field's file may share other definitions and is always unwrapped.
    if isinstance(value, dict) and name in value and (not only_key or len(value) == 1):
        return value[name], "/" + name
    return value, ""


def _schema_problem(value: Any) -> tuple[str, str] | None:
    if not isinstance(value, (dict, bool)):
        return "", f"found {_kind(value)}, expected a mapping"
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(value).check_schema(value)  # type: ignore[arg-type]  # a bool is a schema; the stubs say dict
    except SchemaError as exc:
        return "/" + "/".join(str(p) for p in exc.absolute_path), exc.message
    return None


def _kind(value: Any) -> str:
    names = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", type(None): "null",
             int: "a number", float: "a number"}
    return names.get(type(value), type(value).__name__)
