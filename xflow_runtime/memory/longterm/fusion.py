"""Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009), optionally weighted: pure,
deterministic.

``score(d) = Σ_lists w_list / (k + rank_list(d))`` with 1-based ranks, ``k = 60`` and
``w_list = 1`` unless ``weights`` names the list (weighted RRF, as Elasticsearch's and
Vespa's hybrid search offer: a list known to be less precise counts for less). Ties are broken
by the best single rank, then by the number of lists the item appears in, then by the key — so
the same inputs always give the same order.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Fused:
    key: Hashable
    score: float
    ranks: Mapping[str, int]


def reciprocal_rank_fusion(ranked: Mapping[str, Sequence[Hashable]], *, k: int = 60,
                           limit: int | None = None,
                           weights: Mapping[str, float] | None = None) -> list[Fused]:
    """Fuse ranked lists (name → keys, best first; a key repeated in one list counts once);
    ``weights``: name → weight (> 0) of a list, 1 for a list not named."""
    weight = weights or {}
    ranks: dict[Hashable, dict[str, int]] = {}
    for name in sorted(ranked):
        seen: set[Hashable] = set()
        for position, key in enumerate(ranked[name], start=1):
            if key in seen:
                continue
            seen.add(key)
            ranks.setdefault(key, {})[name] = position
    fused = [Fused(key, sum(weight.get(name, 1.0) / (k + rank) for name, rank in per_list.items()), per_list)
             for key, per_list in ranks.items()]
    fused.sort(key=lambda item: (-item.score, min(item.ranks.values()), -len(item.ranks), repr(item.key)))
    return fused if limit is None else fused[:limit]
