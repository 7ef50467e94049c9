"""Who a chat history belongs to: tenant, agent, user and session (the ``memoryId``).

Three modes (DYPAI): ``none`` keeps no history; ``session`` keeps one history per memoryId;
``user`` keeps one rolling history per authenticated user across all their sessions. Every stored
row carries all four coordinates and every query is filtered by them, so a memoryId reused by
two users (or two agents, or two tenants) never mixes their histories.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from enum import Enum

from xflow_runtime.memory.chat.errors import ChatMemoryError

_log = logging.getLogger("xflow_runtime.memory.chat")

#: memory_id of the single rolling chat a user has in ``user`` mode. Session-mode memory ids
#: are never empty, so this cannot collide with one.
USER_CHAT_KEY = ""


class ScopeMode(str, Enum):
    NONE = "none"
    SESSION = "session"
    USER = "user"


@dataclass(frozen=True)
class ChatKey:
    """The storage identity of one chat. Empty strings stand for "absent" (never NULL), so the
    unique constraint over the four columns holds for anonymous users too."""

    tenant: str
    agent: str
    user: str
    memory_id: str
    session: str  # recorded on each message; equals memory_id in session mode


@dataclass(frozen=True)
class ChatScope:
    """Where a chat history lives.

    ``agent`` identifies the agent application whose memory this is (the integrator passes the
    workflow id; states of one workflow share memory when their memoryId is the same).
    ``session`` is the resolved memoryId (or ``instance:<id>`` when the state has no memoryId).
    """

    agent: str
    session: str | None = None
    user: str | None = None
    tenant: str = "default"
    mode: ScopeMode = ScopeMode.SESSION
    #: the user's erasure epoch when the writing instance started (``None``: not checked); a
    #: write after an erasure of the user is refused (:class:`~xflow_runtime.privacy.subject.SubjectErased`)
    erasure_epoch: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "mode", ScopeMode(self.mode))
        except ValueError:
            raise ChatMemoryError(f"unknown chat memory scope {self.mode!r}: expected none, "
                                  "session or user") from None
        if not self.tenant or not self.agent:
            raise ChatMemoryError("chat memory scope needs a non-empty tenant and agent")

    @classmethod
    def for_instance(cls, agent: str, instance_id: str, *, user: str | None = None,
                     tenant: str = "default") -> "ChatScope":
        """The default scope of an ``aiagent`` state without ``memory``: the workflow instance."""
        return cls(agent=agent, session=f"instance:{instance_id}", user=user, tenant=tenant)

    def key(self) -> ChatKey | None:
        """The chat this scope reads and writes, or ``None`` when the scope is stateless."""
        if self.mode is ScopeMode.NONE:
            return None
        if self.mode is ScopeMode.USER:
            if not self.user:
                _log.warning("chat memory scope 'user' without a user identity (agent %r): "
                             "falling back to stateless", self.agent)
                return None
            return ChatKey(self.tenant, self.agent, self.user, USER_CHAT_KEY, self.session or "")
        if not self.session:
            raise ChatMemoryError("chat memory scope 'session' needs a memoryId (session id)")
        return ChatKey(self.tenant, self.agent, self.user or "", self.session, self.session)
