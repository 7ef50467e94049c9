"""JSON Schemas of agent ``output`` and tool ``parameters``/``output``: the accepted forms,
loading from a file, validators built once, and readable validation messages.

Accepted forms (xFlow shows two; we accept all three): ``{schema: {...}}``, ``{schema: "<uri>"}``,
a bare inline schema (``{type: object, ...}``), or a ``"<uri>"`` string. A URI is a path relative
to the workflow file (``file://`` allowed), JSON or YAML; remote URIs are refused at compile
time, because a plan must not depend on the network.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from xflow_runtime.errors import DefinitionError


@dataclass(frozen=True)
class CompiledSchema:
    schema: Mapping[str, Any]
    validator: Any = field(compare=False, repr=False)

    def errors(self, value: Any) -> list[str]:
        """Every validation problem as ``/json/pointer: message`` (empty when valid)."""
        found = sorted(self.validator.iter_errors(value), key=lambda error: list(error.absolute_path))
        return [f"{_pointer(error.absolute_path)}: {error.message}" for error in found]


def compile_schema(raw: Any, where: str, base_dir: str | None) -> CompiledSchema:
    """Normalise one of the accepted forms and build its validator."""
    schema = _resolve(raw, where, base_dir)
    from jsonschema import exceptions, validators

    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except exceptions.SchemaError as error:
        raise DefinitionError([f"{where}: not a valid JSON Schema: {error.message}"]) from None
    return CompiledSchema(schema=schema, validator=cls(schema))


def _resolve(raw: Any, where: str, base_dir: str | None) -> dict[str, Any]:
    if isinstance(raw, Mapping) and "schema" in raw:
        if set(raw) - {"schema"}:
            raise DefinitionError([f"{where}: with 'schema', no other keys are allowed "
                                   f"(found {', '.join(sorted(set(raw) - {'schema'}))})"])
        raw = raw["schema"]
        where = f"{where}/schema"
    if isinstance(raw, str):
        return _load(raw, where, base_dir)
    if not isinstance(raw, Mapping):
        raise DefinitionError([f"{where}: expected a JSON Schema object or a URI, found {type(raw).__name__}"])
    return dict(raw)


def _load(uri: str, where: str, base_dir: str | None) -> dict[str, Any]:
    if "://" in uri and not uri.startswith("file://"):
        raise DefinitionError([f"{where}: schema URI {uri!r} is remote; only files are supported "
                               "(put the schema next to the workflow, or inline)"])
    path = Path(uri.removeprefix("file://"))
    if not path.is_absolute():
        path = Path(base_dir or ".") / path
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise DefinitionError([f"{where}: cannot read schema file {str(path)!r}: {error.strerror}"]) from None
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml

            value = yaml.safe_load(text)
        else:
            value = json.loads(text)
    except ValueError as error:
        raise DefinitionError([f"{where}: schema file {str(path)!r} is not valid: {error}"]) from None
    except Exception as error:  # yaml.YAMLError
        raise DefinitionError([f"{where}: schema file {str(path)!r} is not valid YAML: {error}"]) from None
    if not isinstance(value, dict):
        raise DefinitionError([f"{where}: schema file {str(path)!r} does not hold an object"])
    return value


def _pointer(path: Any) -> str:
    return "/" + "/".join(str(part) for part in path) if path else "/"
