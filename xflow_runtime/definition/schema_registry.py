"""The JSON Schemas of the xFlow dialect, loaded once and validated offline.

The schema files live in ``<repo>/schemas`` in a checkout and in ``xflow_runtime/_schemas`` in an
installed wheel (``pyproject.toml`` force-includes them). Every file is registered under its
``$id`` in a :class:`referencing.Registry`, so relative ``$ref``s such as
``common.json#/$defs/transition`` resolve without touching the network.

Kept cheap to import: only the standard library at module level; ``jsonschema`` is imported the
first time a validator is asked for, and everything is cached. :func:`fast_workflow_validator`
(``jsonschema-rs``, compiled Rust) answers "valid or not" in well under a millisecond; the
Python validator is built only to explain an invalid document.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - typing only
    import referencing
    from jsonschema.protocols import Validator

#: The stable base of every ``$id``; a file ``x.json`` has ``$id`` ``SCHEMA_BASE_URI + "x.json"``.
SCHEMA_BASE_URI = "https://xflow-runtime.dev/schemas/0.8/"
#: The root schema: one workflow document.
ROOT_SCHEMA = "workflow"

_PACKAGE_DIR = Path(__file__).resolve().parent.parent


class SchemaNotFound(LookupError):
    """No schema folder, or no schema of that name."""


def schema_dir() -> Path:
    """The folder holding the ``*.json`` schema files (installed copy first, then the checkout)."""
    for candidate in (_PACKAGE_DIR / "_schemas", _PACKAGE_DIR.parent / "schemas"):
        if (candidate / f"{ROOT_SCHEMA}.json").is_file():
            return candidate
    raise SchemaNotFound(
        f"the xFlow JSON Schemas were not found (looked in {_PACKAGE_DIR / '_schemas'} "
        f"and {_PACKAGE_DIR.parent / 'schemas'})"
    )


@functools.cache
def _load_schema_files() -> dict[str, dict[str, Any]]:
    folder = schema_dir()
    return {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))}


def schema_files() -> dict[str, dict[str, Any]]:
    """Every schema, by file name without ``.json`` (``"workflow"``, ``"agents"``, …).

    Returns a fresh shallow copy of the mapping; the schema dicts themselves are shared and must
    not be mutated.
    """
    return dict(_load_schema_files())


def schema(name: str = ROOT_SCHEMA) -> dict[str, Any]:
    """One schema by name (``"workflow"`` by default)."""
    files = _load_schema_files()
    try:
        return files[name]
    except KeyError:
        raise SchemaNotFound(f"no schema named {name!r}; known: {', '.join(sorted(files))}") from None


def schema_id(name: str = ROOT_SCHEMA) -> str:
    """The ``$id`` of a schema."""
    return str(schema(name)["$id"])


@functools.cache
def registry() -> "referencing.Registry[Any]":
    """A registry holding every schema under its ``$id`` (no network access)."""
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    resources = [
        (document["$id"], Resource.from_contents(document, default_specification=DRAFT202012))
        for document in _load_schema_files().values()
    ]
    return Registry().with_resources(resources).crawl()


@functools.cache
def validator(name: str = ROOT_SCHEMA) -> "Validator":
    """A cached Draft 2020-12 validator for one schema (format keywords are annotations only)."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema(name), registry=registry())


@functools.cache
def fast_workflow_validator() -> Any:
    """A ``jsonschema_rs`` validator of a whole workflow, or None when that package is missing.

    Only its yes/no verdict is used (``is_valid``): the diagnostics come from the Python
    validator, whose error tree :mod:`~xflow_runtime.definition.schema_errors` explains. Formats
    are annotations only, as for :func:`validator`.
    """
    try:
        import jsonschema_rs
    except ImportError:  # pragma: no cover - a declared dependency; the Python path still works
        return None
    files = _load_schema_files()
    registry = jsonschema_rs.Registry([(document["$id"], document) for document in files.values()])
    return jsonschema_rs.Draft202012Validator(files[ROOT_SCHEMA], registry=registry, validate_formats=False)


def bundled_schema() -> dict[str, Any]:
    """The root schema as one self-contained document, for tools that cannot follow references
    between files (some editors, code generators).

    Every definition of another file ``x.json`` is copied into ``$defs`` as ``x.<name>`` and every
    ``$ref`` is rewritten to a local pointer, so the bundle needs no registry and no network.
    """
    files = _load_schema_files()
    root = files[ROOT_SCHEMA]
    defs: dict[str, Any] = {}
    for name, document in files.items():
        for def_name, definition in document.get("$defs", {}).items():
            key = def_name if name == ROOT_SCHEMA else f"{name}.{def_name}"
            defs[key] = _localise_refs(definition, name)
    bundle = {key: _localise_refs(value, ROOT_SCHEMA) for key, value in root.items() if key != "$defs"}
    bundle["$id"] = SCHEMA_BASE_URI + "workflow.bundle.json"
    bundle["$defs"] = defs
    return bundle


def _localise_refs(node: Any, file_name: str) -> Any:
    """Rewrite ``x.json#/$defs/d`` and ``#/$defs/d`` (inside ``file_name``) to ``#/$defs/x.d``."""
    if isinstance(node, dict):
        result = {key: _localise_refs(value, file_name) for key, value in node.items()}
        ref = node.get("$ref")
        if isinstance(ref, str):
            target_file, _, pointer = ref.partition("#")
            target = target_file.removesuffix(".json") if target_file else file_name
            def_name = pointer.removeprefix("/$defs/")
            result["$ref"] = f"#/$defs/{def_name}" if target == ROOT_SCHEMA else f"#/$defs/{target}.{def_name}"
        return result
    if isinstance(node, list):
        return [_localise_refs(value, file_name) for value in node]
    return node


def workflow_validator() -> "Validator":
    """The cached validator of a whole workflow document (``schemas/workflow.json``).

    Use ``iter_errors(document)``; each error's ``absolute_path`` / ``json_path`` locates the
    offending value, and ``error.schema.get("description")`` (when the failing subschema has one)
    explains a rule in words, e.g. "A `transition` is required unless `end` is set".
    """
    return validator(ROOT_SCHEMA)
