"""Whose memory a request reaches, and the runtime's memory stores for the memory and privacy
routes. The rules (specs/service.md, "Memory and privacy"):

- the tenant is always the credential's;
- an end-user credential (role ``user``) reaches only itself: a ``user`` parameter or path
  segment naming anyone else is a 404, the answer for a missing resource;
- a service credential reaches every user of its tenant, and the agent's own memories (no user).
"""

from __future__ import annotations

import base64
import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from xflow_runtime.service.principal import Principal
from xflow_runtime.service.problems import Problem
from xflow_runtime.service.views import filter_key

if TYPE_CHECKING:
    from xflow_runtime.memory.chat import ChatMemory
    from xflow_runtime.memory.listing import PageKey
    from xflow_runtime.memory.longterm import LongTermMemory
    from xflow_runtime.service.state import ServiceState

MAX_ID = 255


def plausible_id(value: str, what: str) -> str:
    """An id from a path or a parameter: 1–255 printable characters, else 404 (never stored)."""
    if not 0 < len(value) <= MAX_ID or not value.isprintable():
        raise Problem("not-found", f"no {what} with this id")
    return value


def user_reached(principal: Principal, requested: str | None) -> str | None:
    """The end user a request acts on: the credential's own for an end user (``requested`` must
    be absent or the same), ``requested`` (possibly none) for a service credential."""
    if principal.role == "user":
        if requested is not None and requested != principal.user:
            raise Problem("not-found", "no such user")
        return principal.user
    return None if requested is None else plausible_id(requested, "user")


def required_user(principal: Principal, requested: str | None) -> str:
    user = user_reached(principal, requested)
    if user is None:
        raise Problem("validation-error", "name the end user with the 'user' parameter",
                      errors=[{"pointer": "#/user", "detail": "required for a service credential"}])
    return user


async def chat_memory(state: "ServiceState") -> "ChatMemory":
    """The runtime's own chat memory (the one its agent states write)."""
    services = state.runtime._services  # the runtime shares one store per process
    if services.chat_memory is None:
        raise Problem("not-found", "this service keeps no chat memory")
    return await services.chat_memory.memory()


async def long_term_memory(state: "ServiceState") -> "LongTermMemory":
    """The runtime's own long-term memory: its extraction runner is the one consent stops."""
    services = state.runtime._services
    if services.long_term_memory is None:
        raise Problem("not-found", "this service keeps no long-term memory")
    return await services.long_term_memory.memory()


# --- keyset cursors ------------------------------------------------------------------------------
def encode_page_key(key: "PageKey | None", filters: dict[str, Any]) -> str | None:
    if key is None:
        return None
    raw = json.dumps([key.created_at.isoformat(), key.id, filter_key(filters)], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_key(cursor: str | None, filters: dict[str, Any]) -> "PageKey | None":
    """The key a cursor names; a cursor of another list (other filters, another caller) or not
    made by us is a 400."""
    from xflow_runtime.memory.listing import PageKey

    if cursor is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created_at, row_id, key = json.loads(raw)
        if not isinstance(row_id, str) or key != filter_key(filters):
            raise ValueError
        return PageKey(datetime.fromisoformat(created_at), row_id)
    except (ValueError, TypeError):
        raise Problem("invalid-cursor", "the cursor is not one this list returned for these filters") from None
