"""The names a model sees for MCP tools, and the way back.

MCP allows tool names of up to 128 characters with ``.`` (and servers send ``/`` too); OpenAI-
compatible APIs accept only ``^[A-Za-z0-9_-]{1,64}$``. The model-facing name of tool ``t`` of a
server with prefix ``p`` is ``p_t`` when that is already valid; otherwise the invalid characters
become ``_``, the text is cut to leave room, and ``_`` plus the first 8 hex digits of the SHA-256
of ``p`` NUL ``t`` are appended, so two different names never map to one. A name that still
collides (with another server's tool, or a tool of the state) is replaced, for every party to
the collision, by the hashed form of ``server`` NUL ``tool``. The mapping is a pure function of
the tool lists, so a replayed visit maps the same way (specs/mcp.md, "Tool names").
"""

from __future__ import annotations

import hashlib
import re
from typing import Iterable

MAX_LENGTH = 64
VALID_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: A prefix leaves room for a useful part of the tool name.
VALID_PREFIX = re.compile(r"^[A-Za-z0-9_-]{0,40}$")
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
#: Code of the (practically impossible) failure to find distinct names.
NAME_COLLISION = "ToolNameCollision"


def sanitise(text: str) -> str:
    return _INVALID.sub("_", text)


def default_prefix(server_name: str) -> str:
    return sanitise(server_name)[:40]


def _hashed(base: str, identity: str) -> str:
    suffix = "_" + hashlib.sha256(identity.encode("utf-8")).hexdigest()[:8]
    return base[: MAX_LENGTH - len(suffix)] + suffix


def model_name(prefix: str, tool: str) -> str:
    """The model-facing name of ``tool`` under ``prefix`` (``''``: no prefix)."""
    plain = f"{prefix}_{tool}" if prefix else tool
    if VALID_NAME.match(plain):
        return plain
    return _hashed(sanitise(plain) or "tool", f"{prefix}\0{tool}")


def assign(entries: Iterable[tuple[str, str, str]], taken: Iterable[str] = ()) -> dict[str, tuple[str, str]]:
    """``{model name: (server, tool)}`` for ``(server, prefix, tool)`` entries, never reusing a
    name of ``taken`` (the state's other tools). Deterministic in the order of ``entries``."""
    entries = list(entries)
    reserved = set(taken)
    first = [model_name(prefix, tool) for _, prefix, tool in entries]
    counts: dict[str, int] = {}
    for name in first:
        counts[name] = counts.get(name, 0) + 1
    mapping: dict[str, tuple[str, str]] = {}
    for (server, prefix, tool), name in zip(entries, first):
        if counts[name] > 1 or name in reserved:
            name = _hashed(sanitise(f"{prefix}_{tool}" if prefix else tool), f"{server}\0{tool}")
        if name in mapping or name in reserved:
            from xflow_runtime.errors import WorkflowError

            raise WorkflowError(f"MCP tool {tool!r} of server {server!r} and {mapping.get(name, ('a tool',))[0]!r} "
                                f"map to the same name {name!r}", code=NAME_COLLISION)
        mapping[name] = (server, tool)
    return mapping
