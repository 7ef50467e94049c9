"""The user-visible text of a reply while the model is still writing it.

Agents answer with a JSON object (their ``output`` schema); a chat shows its ``response`` string.
:class:`ResponseText` is fed the raw pieces the model streams and returns, each time, the new
characters of ``response`` decoded so far (JSON escapes included, even split across pieces).
Plain text (not starting with ``{``) passes through unchanged. Pure."""

from __future__ import annotations

import json
import re

_KEY = re.compile(r'"response"\s*:\s*"')
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class ResponseText:
    def __init__(self) -> None:
        self._raw = ""
        self._position: int | None = None  # index in _raw of the next undecoded character
        self._plain: bool | None = None
        self._done = False

    def feed(self, piece: str) -> str:
        self._raw += piece
        if self._plain is None:
            stripped = self._raw.lstrip()
            if not stripped:
                return ""
            self._plain = not stripped.startswith("{")
            if self._plain:
                return self._raw
        if self._plain:
            return piece
        if self._position is None:
            match = _KEY.search(self._raw)
            if match is None:
                return ""
            self._position = match.end()
        return self._decode()

    def _decode(self) -> str:
        out: list[str] = []
        raw, i = self._raw, self._position or 0
        while i < len(raw) and not self._done:
            char = raw[i]
            if char == '"':
                self._done = True
                i += 1
                break
            if char != "\\":
                out.append(char)
                i += 1
                continue
            if i + 1 >= len(raw):
                break  # the escape continues in the next piece
            kind = raw[i + 1]
            if kind == "u":
                if i + 6 > len(raw):
                    break
                code = raw[i:i + 6]
                if "\\u" in raw[i + 6:i + 8] and 0xD800 <= int(code[2:], 16) < 0xDC00:
                    if i + 12 > len(raw):
                        break
                    out.append(json.loads(f'"{raw[i:i + 12]}"'))
                    i += 12
                    continue
                if 0xD800 <= int(code[2:], 16) < 0xDC00 and i + 12 > len(raw):
                    break  # a surrogate pair split across pieces
                out.append(json.loads(f'"{code}"'))
                i += 6
                continue
            out.append(_ESCAPES.get(kind, kind))
            i += 2
        self._position = i
        return "".join(out)
