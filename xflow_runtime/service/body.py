"""Reading request bodies strictly: the content type is checked (415), the JSON parsed without
``NaN``/``Infinity`` and with duplicate keys rejected (400), then validated by a pydantic model
(422 with JSON Pointers). FastAPI's own body handling would answer 422 for a wrong content type
and 500 for ``NaN`` (specs/service.md, "Bodies")."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError

from xflow_runtime.service.problems import Problem, validation_problem

Model = TypeVar("Model", bound=BaseModel)
JSON_TYPES = ("application/json",)


def media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def parse_json(raw: bytes) -> Any:
    """Strict JSON (RFC 8259): UTF-8, no NaN/Infinity, no duplicate keys."""
    try:
        text = raw.decode("utf-8")
        return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError:
        raise Problem("malformed-json", "the body is not UTF-8") from None
    except (ValueError, RecursionError) as error:
        message = str(error).split(":", 1)[0] if isinstance(error, json.JSONDecodeError) else str(error)
        raise Problem("malformed-json", f"the body is not valid JSON: {message[:200]}") from None


async def json_body(request: Request, *, optional: bool = False, accepted: tuple[str, ...] = JSON_TYPES) -> Any:
    """The parsed JSON body (``None`` when ``optional`` and there is none)."""
    raw = await request.body()
    if not raw and optional:
        return None
    kind = media_type(request)
    if kind not in accepted:
        raise Problem("unsupported-media-type", f"send {' or '.join(accepted)}, not {kind or 'no content type'}",
                      headers={"Accept-Post": ", ".join(accepted)})
    if not raw:
        raise Problem("malformed-json", "the body is empty")
    return parse_json(raw)


async def model_body(request: Request, model: type[Model]) -> Model:
    value = await json_body(request)
    try:
        return model.model_validate(value)
    except ValidationError as error:
        raise validation_problem(list(error.errors())) from None
