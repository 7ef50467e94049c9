"""Whose long-term memory: tenant, agent and end user. Every read and write takes one.

There is deliberately no "all scopes" value: ``tenant`` and ``agent`` must be non-empty, and
``user=None`` means the agent's own memories (stored as ``""``), not "every user".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xflow_runtime.memory.longterm.errors import LongTermMemoryError
from xflow_runtime.privacy.subject import subject_key  # noqa: F401  (re-exported)

_MAX_ID = 255


@dataclass(frozen=True)
class MemoryScope:
    """The owner of memories and facts. ``user`` is the end user's external reference (the
    identifier the channel uses); ``None`` for memories that belong to the agent itself."""

    tenant: str
    agent: str
    user: str | None = None
    #: the user's erasure epoch when the writing instance started (``None``: not checked)
    erasure_epoch: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name in ("tenant", "agent"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise LongTermMemoryError(f"memory scope needs a non-empty {name}")
        if self.user is not None and not isinstance(self.user, str):
            raise LongTermMemoryError("memory scope user must be a string or None")
        for value in (self.tenant, self.agent, self.user or ""):
            if len(value) > _MAX_ID:
                raise LongTermMemoryError(f"memory scope ids are at most {_MAX_ID} characters")

    @property
    def user_id(self) -> str:
        """The stored form of ``user`` (``""`` for the agent's own memories)."""
        return self.user or ""
