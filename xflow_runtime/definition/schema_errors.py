"""Turn jsonschema errors into :class:`Diagnostic` s that say what was found and what was expected.

A ``oneOf``/``anyOf`` failure (the state list is one) carries one sub-error list per alternative.
We pick the alternative the author meant: alternatives rejected by a discriminator (``type``
const/enum) are dropped, then the one whose errors reach deepest into the document wins, and we
explain each of its errors. When every alternative is rejected by the same discriminator or by
the value's JSON type, one summary message lists what would have been accepted.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

from xflow_runtime.definition.source_map import pointer_from_path

if TYPE_CHECKING:  # jsonschema loads only when a document is invalid (see schema_check)
    from jsonschema.exceptions import ValidationError

#: (pointer, message, code, prefer_key)
Finding = tuple[str, str, str, bool]

_STATE_TYPE = re.compile(r"^/states/\d+/type$")


def explain(errors: Iterable[ValidationError]) -> list[Finding]:
    """One finding per distinct problem; of several type mismatches on one value, the fullest."""
    findings: dict[tuple[str, str], Finding] = {}
    type_findings: dict[str, Finding] = {}
    for error in errors:
        for finding in _explain(error):
            pointer, message, code, _ = finding
            if code == "XF053":
                kept = type_findings.get(pointer)
                if kept is not None and len(kept[1]) >= len(message):
                    continue
                if kept is not None:
                    findings.pop((pointer, kept[1]), None)
                type_findings[pointer] = finding
            findings.setdefault((pointer, message), finding)
    return list(findings.values())


def _explain(error: ValidationError) -> Iterator[Finding]:
    if error.validator in ("oneOf", "anyOf") and error.context:
        yield from _explain_alternatives(error)
    else:
        yield from _leaf(error)


def _explain_alternatives(error: ValidationError) -> Iterator[Finding]:
    pointer = pointer_from_path(error.absolute_path)
    branches: dict[int, list[ValidationError]] = {}
    for sub in error.context or []:
        branches.setdefault(int(sub.relative_schema_path[0]), []).append(sub)
    depth = len(error.absolute_path)
    type_rejected = {b for b, errs in branches.items() if any(_is_root_type(e, depth) for e in errs)}
    if len(type_rejected) == len(branches):
        expected = _join(sorted({t for errs in branches.values() for e in errs if _is_root_type(e, depth)
                                 for t in _as_list(e.validator_value)}))
        yield pointer, f"found {_describe(error.instance)}, expected {expected}", "XF053", False
        return
    mismatches = {b: _discriminator_mismatches(errs, depth) for b, errs in branches.items()}
    plausible = [b for b in branches if not mismatches[b] and b not in type_rejected]
    if not plausible:
        yield from _no_alternative_fits(error, pointer, mismatches)
        return
    required_only = all(all(e.validator == "required" and len(e.absolute_path) == depth for e in branches[b])
                        for b in plausible)
    if required_only and len(plausible) > 1:
        missing = sorted({m for b in plausible for e in branches[b] for m in _missing(e)})
        yield pointer, f"missing one of {_join(missing, 'or')}", "XF052", False
        return
    best = max(plausible, key=lambda b: (max(len(e.absolute_path) for e in branches[b]), -len(branches[b])))
    for sub in branches[best]:
        yield from _explain(sub)


def _no_alternative_fits(error: ValidationError, pointer: str, mismatches: dict[int, list[ValidationError]]
                         ) -> Iterator[Finding]:
    found = [e for errs in mismatches.values() for e in errs]
    keys = {tuple(e.absolute_path) for e in found}
    if len(keys) == 1:
        where = pointer_from_path(found[0].absolute_path)
        allowed = sorted({str(v) for e in found for v in _allowed_values(e)})
        value = found[0].instance
        code = "XF055" if _STATE_TYPE.match(where) else "XF054"
        what = "unknown state type" if code == "XF055" else "value"
        yield where, f"{what} {_show(value)} is not one of {_join(allowed)}{_suggest(value, allowed)}", code, False
        return
    yield pointer, f"{_describe(error.instance)} matches none of the allowed forms", "XF050", False


def _leaf(error: ValidationError) -> Iterator[Finding]:
    pointer = pointer_from_path(error.absolute_path)
    kind, value, instance = error.validator, error.validator_value, error.instance
    if kind == "required":
        for name in _missing(error):
            yield pointer, f"missing required property {name!r}{_rule(error)}", "XF052", True
    elif kind == "additionalProperties" and isinstance(instance, dict):
        schema = error.schema if isinstance(error.schema, Mapping) else {}
        known = sorted(schema.get("properties", {}))
        patterns = list(schema.get("patternProperties", {}))
        for key in instance:
            if key not in known and not any(re.search(p, key) for p in patterns):
                yield (pointer_from_path([*error.absolute_path, key]), f"unknown property {key!r}"
                       f"{_suggest(key, known)}", "XF051", True)
    elif kind == "type":
        yield pointer, f"found {_describe(instance)}, expected {_join(_as_list(value), 'or')}", "XF053", False
    elif kind == "const" and _rule(error):
        yield pointer, f"{_show(instance)} is not allowed here{_rule(error)}", "XF054", False
    elif kind in ("enum", "const"):
        allowed = [str(v) for v in _allowed_values(error)]
        code = "XF055" if _STATE_TYPE.match(pointer) else "XF054"
        yield pointer, f"{_show(instance)} is not one of {_join(allowed)}{_suggest(instance, allowed)}", code, False
    elif kind == "not":
        reason = _rule(error) or ": this combination is not allowed"
        name = pointer.rsplit("/", 1)[-1] if pointer else "this value"
        yield pointer, f"{name!r} is not allowed here{reason}", "XF050", True
    elif kind == "minItems":
        found = "an empty array" if not instance else f"{len(instance)} item(s)"  # type: ignore[arg-type]  # an array here
        yield pointer, f"found {found}, expected at least {value} item(s)", "XF050", False
    elif kind == "minLength" and value == 1:
        yield pointer, "found an empty string, expected a non-empty one", "XF050", False
    elif kind == "oneOf":
        yield pointer, f"{_describe(instance)} matches more than one allowed form; it must match exactly one" \
                       f"{_both_present(error)}", "XF050", False
    else:
        yield pointer, _shorten(error.message), "XF050", False


# -- helpers -----------------------------------------------------------------------------------
def _rule(error: ValidationError) -> str:
    """The schema's own words for a conditional rule (not the description of a whole object)."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    description = schema.get("description")
    if not isinstance(description, str) or "properties" in schema or len(description) > 200:
        return ""
    return f": {description.rstrip('.')}"


def _is_root_type(error: ValidationError, depth: int) -> bool:
    return error.validator == "type" and len(error.absolute_path) == depth


def _discriminator_mismatches(errors: list[ValidationError], depth: int) -> list[ValidationError]:
    """const/enum failures on a direct property (like ``type``) anywhere in these alternatives."""
    found: list[ValidationError] = []
    for error in errors:
        if error.validator in ("const", "enum") and len(error.absolute_path) == depth + 1:
            found.append(error)
        elif error.context:
            branches: dict[Any, list[ValidationError]] = {}
            for sub in error.context:
                branches.setdefault(sub.relative_schema_path[0], []).append(sub)
            nested = [_discriminator_mismatches(errs, depth) for errs in branches.values()]
            if nested and all(nested):
                found.extend(e for group in nested for e in group)
    return found


def _allowed_values(error: ValidationError) -> list[Any]:
    value = error.validator_value
    return list(value) if error.validator == "enum" else [value]  # type: ignore[arg-type]  # enum: a list


def _missing(error: ValidationError) -> list[str]:
    match = re.match(r"^'(.+)' is a required property$", error.message)
    if match:
        return [match.group(1)]
    instance = error.instance if isinstance(error.instance, dict) else {}
    return [name for name in _as_list(error.validator_value) if name not in instance]


def _both_present(error: ValidationError) -> str:
    instance = error.instance if isinstance(error.instance, dict) else {}
    keys = sorted({k for s in _as_list(error.validator_value) if isinstance(s, dict)
                   for k in s.get("required", []) if k in instance and k not in ("name", "type")})
    return f" (found {_join(keys, 'and')}: use only one)" if len(keys) > 1 else ""


def _suggest(value: Any, allowed: list[str]) -> str:
    if not isinstance(value, str):
        return ""
    close = difflib.get_close_matches(value, allowed, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _join(items: list[Any], last: str = "") -> str:
    items = [str(i) for i in items]
    if last and len(items) > 1:
        return ", ".join(items[:-1]) + f" {last} " + items[-1]
    return ", ".join(items)


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _show(value: Any) -> str:
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    if isinstance(value, (dict, list)):
        return json_type(value)
    if value is None or isinstance(value, bool):
        return json.dumps(value)  # null, true, false: the words the author wrote
    return repr(value)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return "an object" if isinstance(value, dict) else f"an array of {len(value)}"
    return f"{json_type(value)} {_show(value)}"


def _shorten(message: str) -> str:
    return message if len(message) <= 200 else message[:197] + "..."
