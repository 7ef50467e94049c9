"""Lint rule: inline JSON Schemas (agent output, tool parameters/output, dataInputSchema) are valid (XF131).

The dialect schema checks only the keywords that shape data; the full metaschema check here
catches the rest (``minimum: "5"``, ``required: name``) at load time instead of at the first call.
"""

from __future__ import annotations

from typing import Any, Iterator

from xflow_runtime.definition.source_map import join_pointer
from xflow_runtime.definition.walk import Reporter, as_dict, enumerate_dicts, states


def check_inline_schemas(document: dict[str, Any], report: Reporter) -> None:
    # jsonschema-rs is not used here: its metaschema check does not judge `format: regex`
    # (and its regex dialect is not Python's), so it would accept patterns the runtime rejects.
    for pointer, schema in inline_schemas(document):
        problem = _metaschema_problem(schema)
        if problem is not None:
            report(join_pointer(pointer, *problem[0]), f"not a valid JSON Schema: {problem[1]}", "XF131")


def _metaschema_problem(schema: dict[str, Any]) -> tuple[tuple[Any, ...], str] | None:
    """(path, message) of the first metaschema violation; jsonschema loads only when a schema is inlined."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema, default=Draft202012Validator).check_schema(schema)
    except SchemaError as exc:
        return tuple(exc.absolute_path), exc.message
    return None


def inline_schemas(document: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    data_input = as_dict(document.get("dataInputSchema"))
    if isinstance(data_input.get("schema"), dict):
        yield "/dataInputSchema/schema", data_input["schema"]
    for state, pointer in states(document):
        output = state.get("output")
        if isinstance(output, dict):
            if "schema" in output:
                if isinstance(output["schema"], dict):
                    yield join_pointer(pointer, "output", "schema"), output["schema"]
            else:
                yield join_pointer(pointer, "output"), output
        for tool, tool_pointer in enumerate_dicts(state.get("tools"), join_pointer(pointer, "tools")):
            for field in ("parameters", "output"):
                schema = as_dict(tool.get(field)).get("schema")
                if isinstance(schema, dict):
                    yield join_pointer(tool_pointer, field, "schema"), schema
        collect = as_dict(state.get("collectDataSchema")).get("schema")
        if isinstance(collect, dict):
            yield join_pointer(pointer, "collectDataSchema", "schema"), collect
