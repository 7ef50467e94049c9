"""What the long-term memory API returns: plain frozen dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Mapping

MemoryKind = Literal["memory", "fact"]
HitKind = Literal["memory", "fact", "message"]
FACT_CATEGORIES = ("preference", "fact", "event", "relationship", "decision", "general")


@dataclass(frozen=True)
class Memory:
    """An agent memory (``kind='memory'``: title, content, tags) or an extracted fact
    (``kind='fact'``: content, category, importance)."""

    id: str
    kind: MemoryKind
    content: str
    title: str | None = None
    tags: tuple[str, ...] = ()
    category: str | None = None
    importance: int | None = None
    source: str | None = None
    embedding_model: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able (for tool results and ``--json`` output)."""
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "content": self.content}
        if self.kind == "memory":
            out.update(title=self.title, tags=list(self.tags))
        else:
            out.update(category=self.category, importance=self.importance)
        for name in ("created_at", "updated_at"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value.isoformat()
        return out


@dataclass(frozen=True)
class WriteResult:
    memory: Memory
    created: bool  # False: an existing memory (same title, or a near-duplicate fact) was updated


@dataclass(frozen=True)
class MemoryPage:
    items: tuple[Memory, ...]
    next_offset: int | None  # None: no more pages


@dataclass(frozen=True)
class SearchHit:
    """One fused search result. ``ranks`` holds its 1-based rank in each source list it was in
    (``semantic``, ``keyword``, ``messages``)."""

    kind: HitKind
    id: str
    text: str
    score: float
    ranks: Mapping[str, int] = field(default_factory=dict)
    title: str | None = None
    tags: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "text": self.text,
                               "score": round(self.score, 6)}
        if self.title is not None:
            out["title"] = self.title
        if self.tags:
            out["tags"] = list(self.tags)
        return out


@dataclass(frozen=True)
class ErasureReceipt:
    """What erasing a user removed, per table (a second erasure returns zeros)."""

    tenant: str
    user: str
    deleted: Mapping[str, int]
    erasure_epoch: int

    @property
    def total(self) -> int:
        return sum(self.deleted.values())
