"""JSON Schemas a workflow validates its data with: ``dataInputSchema`` and SonataFlow's
``workflow-output-schema`` extension, compiled once.

A schema file may reference other files with relative ``$ref``s (``"items": {"$ref":
"complex.json"}``): they resolve against **the schema file's own folder**, whatever its ``$id``
says (SonataFlow's ``classpath:/schema/x.json`` ids name the same folder). :func:`anchor_refs`
rewrites them to absolute ``file://`` URIs when the file is read, and the validator's registry
reads such URIs from the local disk only (JSON or YAML), never from the network.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import unquote, urlsplit

from xflow_runtime.plan.definitions import invalid
from xflow_runtime.plan.states import DataInputSchema

OUTPUT_SCHEMA_EXTENSION = "workflow-output-schema"


def data_input_schema(raw: Any, base_dir: str | None) -> DataInputSchema | None:
    return _compiled(raw, base_dir, "/dataInputSchema")


def output_schema(extensions: Any, base_dir: str | None) -> DataInputSchema | None:
    """The ``outputSchema`` of a ``workflow-output-schema`` extension (a URI, an inline schema, or
    ``{schema, failOnValidationErrors}``)."""
    for index, extension in enumerate(extensions if isinstance(extensions, list) else ()):
        if isinstance(extension, Mapping) and extension.get("extensionid") == OUTPUT_SCHEMA_EXTENSION:
            return _compiled(extension.get("outputSchema"), base_dir, f"/extensions/{index}/outputSchema")
    return None


def _compiled(raw: Any, base_dir: str | None, where: str) -> DataInputSchema | None:
    if raw is None:
        return None
    fail = True
    if isinstance(raw, Mapping) and "schema" in raw:
        fail = bool(raw.get("failOnValidationErrors", True))
        raw = raw["schema"]
    # Inline: relative $refs resolve against the workflow's folder (a file's were anchored when read).
    schema = anchor_refs(raw, Path(base_dir or os.getcwd())) if isinstance(raw, Mapping) \
        else _read_schema(raw, base_dir, where)
    import jsonschema  # only workflows that declare a schema pay for this import

    document: dict[str, Any] = dict(schema)
    try:
        validator_class = jsonschema.validators.validator_for(document)
        validator_class.check_schema(document)
    except jsonschema.SchemaError as exc:
        raise invalid(where, f"not a valid JSON Schema: {exc.message}") from None
    validator = validator_class(document, registry=_local_registry(document))
    return DataInputSchema(schema=document, fail_on_validation_errors=fail, validator=validator)


def anchor_refs(schema: Any, folder: Path) -> Any:
    """A copy of ``schema`` whose relative file ``$ref``s are absolute ``file://`` URIs under ``folder``."""
    if isinstance(schema, dict):
        copied = {key: anchor_refs(value, folder) for key, value in schema.items()}
        ref = schema.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#") and len(urlsplit(ref).scheme) <= 1:
            target, _, fragment = ref.partition("#")
            uri = (folder / target).resolve().as_uri()
            copied["$ref"] = f"{uri}#{fragment}" if fragment else uri
        return copied
    if isinstance(schema, list):
        return [anchor_refs(value, folder) for value in schema]
    return schema


def _read_schema(uri: Any, base_dir: str | None, where: str) -> Mapping[str, Any]:
    if not isinstance(uri, str):
        raise invalid(where, f"expected a schema URI or object, found {type(uri).__name__}")
    path = uri[len("file://"):] if uri.startswith("file://") else uri
    if "://" in path:
        raise invalid(where, f"{uri!r}: only local schema files are read")
    if not os.path.isabs(path):
        path = os.path.join(base_dir or os.getcwd(), path)
    try:
        schema = _parse_file(path)
    except OSError as exc:
        raise invalid(where, f"cannot read {uri!r}: {exc.strerror}") from None
    except Exception as exc:  # noqa: BLE001 - any parse failure is a definition problem
        raise invalid(where, f"{uri!r} is not JSON/YAML: {exc}") from None
    if not isinstance(schema, Mapping):
        raise invalid(where, f"{uri!r} does not hold a JSON Schema object")
    anchored: Mapping[str, Any] = anchor_refs(schema, Path(path).resolve().parent)
    return anchored


def _parse_file(path: str) -> Any:
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if path.endswith((".yaml", ".yml")):
        import yaml

        return yaml.safe_load(text)
    return json.loads(text)


def _local_registry(root: Mapping[str, Any]) -> Any:
    from referencing import Registry, Resource
    from referencing.exceptions import NoSuchResource
    from referencing.jsonschema import DRAFT202012, specification_with

    # A referenced file without $schema is read in the dialect of the schema that references it.
    dialect = specification_with(str(root.get("$schema", "")), default=DRAFT202012)

    def retrieve(uri: str) -> Resource:
        parts = urlsplit(uri)
        if parts.scheme != "file":
            raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # attrs class mypy cannot see
        path = unquote(parts.path)
        try:
            contents = anchor_refs(_parse_file(path), Path(path).parent)
        except Exception:  # noqa: BLE001 - unreadable: the validation error names the reference
            raise NoSuchResource(ref=uri) from None  # type: ignore[call-arg]  # (as above)
        return Resource.from_contents(contents, default_specification=dialect)

    return Registry(retrieve=retrieve)  # type: ignore[call-arg]  # (as above)
