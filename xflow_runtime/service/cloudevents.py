"""The CloudEvents 1.0 HTTP binding, read by hand (the SDK invents ids for binary events without
``ce-id`` and picks binary mode from any stray ``ce-`` header; specs/service.md, "Events").

- structured: ``Content-Type: application/cloudevents+json``, the event is the JSON body;
- batch: ``application/cloudevents-batch+json``, a JSON array of structured events (all or
  nothing: one invalid event rejects the batch, its pointer names it);
- binary: any other content type, attributes in ``ce-*`` headers (percent-decoded UTF-8), the
  body is ``data`` (JSON when the content type is JSON, text when UTF-8, else ``data_base64``).

Pure: bytes and headers in, a list of event dicts out, or :class:`Problem`."""

from __future__ import annotations

import base64
import re
from typing import Any, Mapping
from urllib.parse import unquote

from xflow_runtime.service.body import parse_json
from xflow_runtime.service.problems import Problem

STRUCTURED = "application/cloudevents+json"
BATCH = "application/cloudevents-batch+json"
REQUIRED = ("id", "source", "specversion", "type")
MAX_BATCH = 100
_ATTRIBUTE = re.compile(r"^[a-z0-9]{1,20}$")


def _invalid(detail: str, pointer: str) -> Problem:
    return Problem("cloudevent-invalid", detail, errors=[{"pointer": pointer, "detail": detail}])


def _checked(event: Any, at: str) -> dict[str, Any]:
    if not isinstance(event, dict):
        raise _invalid("a CloudEvent must be a JSON object", at or "#/")
    for name in REQUIRED:
        value = event.get(name)
        if not isinstance(value, str) or not value:
            raise _invalid(f"the required attribute '{name}' is missing or not a non-empty string", f"{at}/{name}")
    if event["specversion"] != "1.0":
        raise _invalid(f"specversion {event['specversion']!r} is not supported (only 1.0)", f"{at}/specversion")
    for name in event:
        if name not in ("data", "data_base64") and not _ATTRIBUTE.match(name):
            raise _invalid(f"attribute name {name!r} is not lowercase letters and digits (≤ 20)", f"{at}/{name}")
    if "data_base64" in event:
        if "data" in event:
            raise _invalid("an event has data or data_base64, not both", f"{at}/data_base64")
        event = dict(event)
        event["data"] = _decoded(event.pop("data_base64"), event.get("datacontenttype"), f"{at}/data_base64")
    return event


def _decoded(encoded: Any, content_type: Any, at: str) -> Any:
    try:
        raw = base64.b64decode(str(encoded), validate=True)
    except ValueError:
        raise _invalid("data_base64 is not base64", at) from None
    return _data(raw, content_type if isinstance(content_type, str) else None)


def _data(raw: bytes, content_type: str | None) -> Any:
    kind = (content_type or "application/json").split(";", 1)[0].strip().lower()
    if kind == "application/json" or kind.endswith("+json"):
        return parse_json(raw) if raw else None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return {"data_base64": base64.b64encode(raw).decode()}


def parse(body: bytes, headers: Mapping[str, str]) -> tuple[str, list[dict[str, Any]]]:
    """(mode, events)."""
    content_type = headers.get("content-type", "")
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == STRUCTURED:
        return "structured", [_checked(parse_json(body), "#")]
    if kind == BATCH:
        events = parse_json(body)
        if not isinstance(events, list):
            raise _invalid("a batch is a JSON array of events", "#/")
        if len(events) > MAX_BATCH:
            raise Problem("payload-too-large", f"a batch holds at most {MAX_BATCH} events")
        return "batch", [_checked(event, f"#/{i}") for i, event in enumerate(events)]
    if kind.startswith("application/cloudevents"):
        raise Problem("unsupported-media-type", f"{kind} is not supported; send {STRUCTURED} or {BATCH}",
                      headers={"Accept-Post": f"{STRUCTURED}, {BATCH}, application/json"})
    return "binary", [_binary(body, headers, content_type)]


def _binary(body: bytes, headers: Mapping[str, str], content_type: str) -> dict[str, Any]:
    event: dict[str, Any] = {}
    for name, value in headers.items():
        name = name.lower()
        if not name.startswith("ce-"):
            continue
        attribute = name[3:]
        if attribute == "datacontenttype":
            raise _invalid("binary mode carries the content type in Content-Type, not ce-datacontenttype",
                           "#/datacontenttype")
        try:
            event[attribute] = unquote(value.strip().strip('"'), errors="strict")
        except UnicodeDecodeError:
            raise _invalid(f"header ce-{attribute} is not percent-encoded UTF-8", f"#/{attribute}") from None
    missing = [f"ce-{n}" for n in REQUIRED if not event.get(n)]
    if missing:
        raise _invalid(f"binary mode needs the headers {', '.join(missing)}", f"#/{missing[0][3:]}")
    if content_type:
        event["datacontenttype"] = content_type
    if body:
        event["data"] = _data(body, content_type or None)
    return _checked(event, "#")
