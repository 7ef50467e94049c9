"""OpenAPI parameter serialization: ``style`` × ``explode`` × ``allowReserved`` (pure, no I/O).

The table is OpenAPI 3.1.1 §4.8.12.4 "Style Examples" (the same rows as 3.0.4), which corrects
3.0.3's label (``.blue,black,brown`` for ``explode: false``, as RFC 6570 §3.2.5 says) and gives
the query delimiters percent-encoded (``color=blue%7Cblack%7Cbrown``). Rendering follows
RFC 6570 §3.2: a value's own characters are percent-encoded (everything but the unreserved set;
``allowReserved`` keeps the reserved set and ``%XX`` triples, except ``#``, in query values), the
delimiters a style adds are not. Headers are not percent-encoded (a header is not a URI).

What the specification leaves undefined is refused, never guessed: a nested array or object
inside a styled value, ``spaceDelimited``/``pipeDelimited`` with ``explode: true``, a
primitive value, or a value holding the style's own delimiter (encoded, it would read as one), ``deepObject`` with anything but an object of primitives, a style in a
location that does not allow it. Decisions: specs/functions.md §4.2.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import quote

#: location → (default style, styles the location allows)
STYLES: dict[str, tuple[str, frozenset[str]]] = {
    "path": ("simple", frozenset({"simple", "label", "matrix"})),
    "query": ("form", frozenset({"form", "spaceDelimited", "pipeDelimited", "deepObject"})),
    "header": ("simple", frozenset({"simple"})),
    "cookie": ("form", frozenset({"form"})),
}
#: RFC 3986 reserved characters kept by ``allowReserved`` (``#`` would end the URL: always encoded)
_RESERVED = ":/?[]@!$&'()*+,;="


class StyleError(ValueError):
    """A value the declared style cannot serialize (the OpenAPI table says n/a)."""


@dataclass(frozen=True)
class Style:
    """How one declared parameter is written: ``style``, ``explode``, ``allowReserved``, or, for
    a parameter declared with ``content``, its media type (the value is then serialized whole)."""

    name: str = "form"
    explode: bool = True
    allow_reserved: bool = False
    media_type: str | None = None


def default_style(location: str) -> Style:
    style = STYLES[location][0]
    return Style(style, explode=style == "form")


def style_problem(location: str, style: str, explode: bool) -> str | None:
    """Why a declared (location, style, explode) cannot be honoured, or ``None``."""
    allowed = STYLES.get(location, ("", frozenset()))[1]
    if style not in allowed:
        return (f"style '{style}' is not allowed in {location} (allowed: {', '.join(sorted(allowed))})"
                if allowed else f"parameters in {location} have no style")
    if style in ("spaceDelimited", "pipeDelimited") and explode:
        return f"style '{style}' with explode: true is not defined by OpenAPI (use form)"
    return None


def serialize_path(name: str, value: Any, style: Style) -> str:
    """The text that replaces ``{name}`` in the path template."""
    if style.media_type is not None:
        return _encode(_content_text(value, style), False)
    items = _items(name, value)
    encoded = [(_encode(k, False) if k is not None else None, _encode(v, False)) for k, v in items]
    if style.name == "matrix":
        if not encoded or (len(encoded) == 1 and encoded[0][1] == "" and encoded[0][0] is None):
            return f";{name}"
        if style.explode:
            return "".join(f";{k}={v}" if k is not None else f";{name}={v}" for k, v in encoded)
        return f";{name}=" + ",".join(_flat(encoded))
    if style.name == "label":
        if style.explode:
            return "." + ".".join(f"{k}={v}" if k is not None else v for k, v in encoded)
        return "." + ",".join(_flat(encoded))
    return _simple(encoded, style.explode)


def serialize_header(name: str, value: Any, style: Style) -> str:
    if style.media_type is not None:
        text = _content_text(value, style)
    else:
        text = _simple(_items(name, value), style.explode)
    if "\r" in text or "\n" in text:
        raise StyleError(f"header '{name}' cannot hold a line break")
    return text


def serialize_query(name: str, value: Any, style: Style) -> list[str]:
    """``key=value`` pieces, percent-encoded, to join with ``&``. An empty array or object adds
    nothing (RFC 6570: an empty list is undefined)."""
    key = _encode(name, False)
    if style.media_type is not None:
        return [f"{key}={_encode(_content_text(value, style), style.allow_reserved)}"]
    if style.name == "deepObject":
        return _deep_object(name, value, style)
    if style.name in ("spaceDelimited", "pipeDelimited"):
        if not isinstance(value, (list, tuple, Mapping)):
            raise StyleError(f"query parameter '{name}': style '{style.name}' needs an array or an object")
        delimiter, separator = (" ", "%20") if style.name == "spaceDelimited" else ("|", "%7C")
        if any(delimiter in text for text in _flat(_items(name, value))):
            # the delimiter is percent-encoded like the data: a receiver could not tell them apart
            raise StyleError(f"query parameter '{name}': a value holds {delimiter!r}, the delimiter of style "
                             f"'{style.name}', and could not be told apart from it")
        encoded = _encoded_items(name, value, style)
        return [f"{key}={separator.join(_flat(encoded))}"] if encoded else []
    return _form(name, value, style)


def serialize_cookie(name: str, value: Any, style: Style) -> list[str]:
    """``name=value`` pieces of the ``Cookie`` header (joined with ``; ``)."""
    if style.media_type is not None:
        return [f"{name}={_encode(_content_text(value, style), False)}"]
    return _form(name, value, style)


def plain_query(name: str, value: Any) -> list[str]:
    """An argument no parameter declared (xFlow's "rest" in the query): arrays repeat the key,
    objects are compact JSON; kept from before styles were read, it is not an OpenAPI style."""
    values = value if isinstance(value, (list, tuple)) else [value]
    return [f"{_encode(name, False)}={_encode(_text(item, nested_ok=True), False)}"
            for item in values if item is not None]


# --- the RFC 6570 pieces ---------------------------------------------------------------------------

def _form(name: str, value: Any, style: Style) -> list[str]:
    key = _encode(name, False)
    encoded = _encoded_items(name, value, style)
    if not isinstance(value, (list, tuple, Mapping)):
        return [f"{key}={encoded[0][1]}"]
    if not encoded:
        return []
    if not style.explode:
        return [f"{key}={','.join(_flat(encoded))}"]
    return [f"{k if k is not None else key}={v}" for k, v in encoded]


def _deep_object(name: str, value: Any, style: Style) -> list[str]:
    if not isinstance(value, Mapping):
        raise StyleError(f"query parameter '{name}': style 'deepObject' needs an object")
    pieces = []
    for prop, item in _items(name, value):
        pieces.append(f"{_encode(f'{name}[{prop}]', False)}={_encode(item, style.allow_reserved)}")
    return pieces


def _simple(items: list[tuple[str | None, str]], explode: bool) -> str:
    if explode:
        return ",".join(f"{k}={v}" if k is not None else v for k, v in items)
    return ",".join(_flat(items))


def _encoded_items(name: str, value: Any, style: Style) -> list[tuple[str | None, str]]:
    return [(_encode(k, False) if k is not None else None, _encode(v, style.allow_reserved))
            for k, v in _items(name, value)]


def _items(name: str, value: Any) -> list[tuple[str | None, str]]:
    """A primitive → one unnamed item; an array → unnamed items (nulls skipped); an object →
    named items. Nested arrays/objects are refused: no OpenAPI style defines them."""
    if isinstance(value, Mapping):
        return [(str(k), _text(v, name=name)) for k, v in value.items() if v is not None]
    if isinstance(value, (list, tuple)):
        return [(None, _text(v, name=name)) for v in value if v is not None]
    return [(None, _text(value, name=name))]


def _flat(items: list[tuple[str | None, str]]) -> list[str]:
    flat: list[str] = []
    for k, v in items:
        flat.extend((k, v) if k is not None else (v,))
    return flat


def _text(value: Any, *, name: str = "", nested_ok: bool = False) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)) or value is None:
        return json.dumps(value)
    if nested_ok:
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    raise StyleError(f"parameter '{name}': OpenAPI styles cannot serialize a nested array or object "
                     f"(declare the parameter with content: application/json to send JSON)")


def _content_text(value: Any, style: Style) -> str:
    if "json" in (style.media_type or ""):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return _text(value)


def _encode(text: str, reserved: bool) -> str:
    if not reserved:
        return quote(text, safe="")
    # reserved expansion (RFC 6570 "+"): keep reserved characters and existing %XX triples
    out, index = [], 0
    while index < len(text):
        char = text[index]
        if char == "%" and _is_triple(text, index):
            out.append(text[index:index + 3])
            index += 3
            continue
        out.append(char if char in _RESERVED else quote(char, safe=""))
        index += 1
    return "".join(out)


def _is_triple(text: str, index: int) -> bool:
    hexdigits = "0123456789abcdefABCDEF"
    return index + 2 < len(text) and text[index + 1] in hexdigits and text[index + 2] in hexdigits
