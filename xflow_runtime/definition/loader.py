"""``load_workflow``: source text → checked document (+ compiled plan), or every problem at once.

Steps: read (YAML/JSON with positions) → root must be a mapping → inline referenced files →
schema → ``dataInputSchema`` file → lint → compile the plan. Every step reports
:class:`Diagnostic` s instead of raising; :class:`~xflow_runtime.errors.DefinitionError` carries
them all when at least one is an error.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from xflow_runtime.definition.compat import accept_findings, normalize, severity_for
from xflow_runtime.definition.diagnostics import CODES, Diagnostic, errors_in, sort_key
from xflow_runtime.definition.lint import run_lint
from xflow_runtime.definition.reader import ParsedSource, parse_source, read_path
from xflow_runtime.definition.references import ReferenceContext, resolve_data_input_schema, resolve_references
from xflow_runtime.definition.schema_check import schema_findings
from xflow_runtime.definition.schema_errors import json_type
from xflow_runtime.definition.source_map import DocumentMap, SourceMap
from xflow_runtime.errors import DefinitionError

_FILE_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class LoadedWorkflow:
    """A checked workflow: ``document`` has references inlined; ``diagnostics`` holds warnings only."""

    document: dict[str, Any]
    diagnostics: list[Diagnostic]
    source_name: str
    base_dir: Path
    plan: Any = field(default=None, repr=False)
    #: every file the check read besides the document (references, ``dataInputSchema``), in order
    referenced_files: tuple[Path, ...] = ()


@dataclass
class CheckResult:
    """Everything :func:`check_workflow` learned; ``document`` is None when the text did not parse."""

    document: dict[str, Any] | None
    diagnostics: list[Diagnostic]
    source_name: str
    base_dir: Path
    document_map: DocumentMap | None = field(default=None, repr=False)
    #: every file the check read besides the document (references, ``dataInputSchema``), in order
    referenced_files: tuple[Path, ...] = ()

    @property
    def errors(self) -> list[Diagnostic]:
        return errors_in(self.diagnostics)


def load_workflow(path_or_text: str | os.PathLike[str], *, source_name: str | None = None,
                  base_dir: str | os.PathLike[str] | None = None, validator: Any = None,
                  compile: bool = True, strict: bool = False) -> LoadedWorkflow:
    """Load, check and compile one workflow. Raises :class:`DefinitionError` listing every error.

    ``path_or_text`` is a path (a :class:`os.PathLike`, or a one-line string naming an existing
    file or ending in .yaml/.yml/.json) or the document text itself. ``base_dir`` (default: the
    file's folder, or the current folder for text) is where relative references resolve.
    ``validator`` replaces the dialect's schema validator (tests); ``compile=False`` skips the plan.
    ``strict`` makes every SonataFlow relaxation (XF140–XF147) an error instead of a warning.
    """
    result = check_workflow(path_or_text, source_name=source_name, base_dir=base_dir, validator=validator,
                            strict=strict)
    if result.errors or result.document is None:
        raise DefinitionError(result.diagnostics)
    plan = None
    if compile:
        plan, plan_problems = build_plan(result.document, result.base_dir, result.source_name,
                                         result.document_map)
        if plan_problems:
            raise DefinitionError(result.diagnostics + plan_problems)
    return LoadedWorkflow(result.document, result.diagnostics, result.source_name, result.base_dir, plan,
                          result.referenced_files)


def check_workflow(path_or_text: str | os.PathLike[str], *, source_name: str | None = None,
                   base_dir: str | os.PathLike[str] | None = None, validator: Any = None,
                   strict: bool = False) -> CheckResult:
    """Every loader check (not the plan compiler), without raising; diagnostics sorted by position."""
    parsed, name, folder = _read(path_or_text, source_name, base_dir)
    document_map = DocumentMap(parsed.source_map)
    collector = _Collector(document_map, list(parsed.diagnostics), strict)
    value = parsed.value
    if value is not None and not isinstance(value, dict):
        collector.found.append(_root_not_mapping(value, path_or_text, source_name, parsed))
        value = None
    if value is None:  # duplicate keys and non-JSON values still give a value: keep checking it
        return CheckResult(None, _finish(collector.found), name, folder, document_map)

    display_dir = "" if name.startswith("<") else os.path.dirname(name)
    context = ReferenceContext(folder, display_dir, document_map, collector.found.append, {})
    resolve_references(value, context)
    normalize(value, collector.report)
    for pointer, message, code, prefer_key in accept_findings(schema_findings(value, validator), value,
                                                              collector.report):
        collector.report(pointer, message, code, prefer_key=prefer_key)
    resolve_data_input_schema(value, context)
    run_lint(value, collector.report)
    found = _drop_superseded(collector.found)
    if errors_in(found):  # reachability over a broken graph is noise until the errors are fixed
        found = [d for d in found if d.code != "XF119"]
    return CheckResult(value, _finish(found), name, folder, document_map, tuple(context.cache))


class _Collector:
    """Turns (pointer, message, code) reports into positioned diagnostics, one per problem.

    Schema findings (XF05x) come first; a later lint finding on a pointer the schema already
    explained is dropped, so one mistake does not produce two messages.
    """

    def __init__(self, document_map: DocumentMap, found: list[Diagnostic], strict: bool = False) -> None:
        self.document_map = document_map
        self.found = found
        self.strict = strict
        self._schema_pointers: set[str] = set()

    def report(self, pointer: str, message: str, code: str, *, severity: str | None = None,
               prefer_key: bool = False) -> None:
        if code.startswith("XF05"):
            self._schema_pointers.add(pointer)
        elif pointer in self._schema_pointers:
            return
        file, inner, (line, column) = self.document_map.resolve(pointer, prefer_key=prefer_key)
        level = severity_for(code, self.strict) or severity or (CODES[code].severity if code in CODES else "error")
        self.found.append(Diagnostic(file, line, column, inner, message, level, code))  # type: ignore[arg-type]


def _root_not_mapping(value: Any, path_or_text: str | os.PathLike[str], source_name: str | None,
                      parsed: ParsedSource) -> Diagnostic:
    hint = ""
    text = path_or_text.strip() if isinstance(path_or_text, str) else ""
    if isinstance(value, str) and text and "\n" not in text and source_name is None and not _names_a_file(text):
        hint = f" (read as YAML text: no file named {text!r} exists)"
    return Diagnostic(parsed.source_map.file, *parsed.source_map.locate(""), "", f"the document root is "
                      f"{json_type(value)}, expected a mapping with id, specVersion and states{hint}", "error", "XF008")


def validate_documents(paths: Iterable[str | os.PathLike[str]], *, compile: bool = True,
                       strict: bool = False) -> list[Diagnostic]:
    """Check each file and return every diagnostic (errors and warnings), for ``xflow validate``."""
    found: list[Diagnostic] = []
    for path in paths:
        found.extend(_with_plan_problems(check_workflow(Path(path), source_name=str(path), strict=strict), compile))
    return found


def validate_text(text: str, source_name: str = "<stdin>", *, compile: bool = True,
                  strict: bool = False) -> list[Diagnostic]:
    """Like :func:`validate_documents` for one document given as text (``xflow validate -``)."""
    return _with_plan_problems(check_workflow(text, source_name=source_name, strict=strict), compile)


def _with_plan_problems(result: CheckResult, compile: bool) -> list[Diagnostic]:
    if not compile or result.document is None or result.errors:
        return result.diagnostics
    return result.diagnostics + build_plan(result.document, result.base_dir, result.source_name,
                                           result.document_map)[1]


def build_plan(document: dict[str, Any], base_dir: Path, source_name: str,
               document_map: DocumentMap | None = None) -> tuple[Any, list[Diagnostic]]:
    """Compile the plan (``xflow_runtime.plan.compile_plan``); its complaints become diagnostics.

    The plan compiler sees only documents that passed every check here, so a complaint from it
    means this loader missed a rule (XF060), and a crash is a bug (XF199) — reported, not raised.
    """
    try:
        from xflow_runtime.plan import compile_plan
    except ImportError:  # the plan package is optional while the runtime is being assembled
        return None, []
    locate = document_map or DocumentMap(SourceMap(source_name))
    try:
        return compile_plan(document, base_dir=str(base_dir), source_name=source_name), []
    except DefinitionError as exc:
        return None, [_plan_diagnostic(item, locate, "XF060") for item in exc.diagnostics]
    except Exception as exc:  # noqa: BLE001 - a user must see a diagnostic, not a traceback
        return None, [_plan_diagnostic(f"internal error while compiling the plan: {type(exc).__name__}: {exc}",
                                       locate, "XF199")]


def _plan_diagnostic(item: Any, document_map: DocumentMap, code: str) -> Diagnostic:
    if isinstance(item, Diagnostic):
        return item
    text = str(item)
    match = re.match(r"^(/\S*): (.*)$", text, re.DOTALL)
    pointer, message = (match.group(1), match.group(2)) if match else ("", text)
    file, inner, (line, column) = document_map.resolve(pointer)
    return Diagnostic(file, line, column, inner, message, "error", code)


def _read(path_or_text: str | os.PathLike[str], source_name: str | None,
          base_dir: str | os.PathLike[str] | None) -> tuple[ParsedSource, str, Path]:
    if isinstance(path_or_text, os.PathLike) or _names_a_file(path_or_text):
        path = Path(path_or_text)
        name = source_name or str(path_or_text)
        folder = Path(base_dir) if base_dir is not None else path.resolve().parent
        return read_path(path, name), name, folder
    name = source_name or "<string>"
    folder = Path(base_dir) if base_dir is not None else Path.cwd()
    return parse_source(path_or_text, name, json_expected=name.lower().endswith(".json")), name, folder


def _names_a_file(text: str) -> bool:
    if "\n" in text or not text.strip() or len(text) > 4096:
        return False
    return text.lower().endswith(_FILE_SUFFIXES) or os.path.isfile(text)


def _drop_superseded(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """A lint finding that names the real problem replaces the schema's confusing symptom.

    A switch with both condition kinds fails the schema as "unknown property 'dataConditions'";
    XF116 says what is wrong, so the unknown-property findings on that switch go.
    """
    mixed = {(d.file, d.pointer.rsplit("/", 1)[0]) for d in diagnostics if d.code == "XF116"}
    return [d for d in diagnostics if not (d.code == "XF051" and (d.file, d.pointer.rsplit("/", 1)[0]) in mixed
                                           and d.pointer.endswith(("/dataConditions", "/eventConditions")))]


def _finish(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    unique = {(d.file, d.line, d.column, d.pointer, d.message, d.code): d for d in diagnostics}
    return sorted(unique.values(), key=sort_key)
