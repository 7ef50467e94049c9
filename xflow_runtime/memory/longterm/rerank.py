"""Optional second stage: the fused candidates reordered by a reranker through ``litellm.arerank``
(Cohere, Jina, Voyage, … or a self-hosted Cohere-compatible endpoint). Off unless
``LongTermOptions.rerank_model`` is set. Any failure — HTTP error, timeout, an answer that does not
name every candidate once — is logged and the fused order is kept.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from xflow_runtime.memory.longterm.config import LongTermOptions

_log = logging.getLogger("xflow_runtime.memory.longterm")


def order_from_results(results: Sequence[Any], count: int) -> list[int] | None:
    """Candidate positions best first from a rerank answer (``index`` + ``relevance_score``);
    ``None`` when the answer is not a permutation of a prefix of the candidates' positions."""
    scored: list[tuple[float, int]] = []
    for item in results:
        index = item.get("index") if isinstance(item, dict) else getattr(item, "index", None)
        score = item.get("relevance_score") if isinstance(item, dict) else getattr(item, "relevance_score", None)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count \
                or not isinstance(score, (int, float)):
            return None
        scored.append((-float(score), index))
    if len({index for _, index in scored}) != len(scored) or not scored:
        return None
    ranked = [index for _, index in sorted(scored)]
    returned = set(ranked)
    # candidates the reranker did not return (top_n) keep their fused order after the rest
    return ranked + [index for index in range(count) if index not in returned]


class Reranker:
    def __init__(self, options: LongTermOptions):
        self.options = options

    @property
    def enabled(self) -> bool:
        return bool(self.options.rerank_model)

    async def order(self, query: str, documents: Sequence[str]) -> list[int] | None:
        """Positions of ``documents`` best first, or ``None`` (disabled or failed: keep the order)."""
        if not self.enabled or len(documents) < 2:
            return None
        try:
            response = await asyncio.wait_for(self._call(query, list(documents)), self.options.rerank_timeout_s)
            order = order_from_results(getattr(response, "results", None) or [], len(documents))
        except Exception as error:  # provider down, bad key, timeout: the fused order stands
            _log.warning("reranking with %s failed (%s); fused order kept", self.options.rerank_model,
                         type(error).__name__)
            return None
        if order is None:
            _log.warning("reranking with %s returned a malformed answer; fused order kept", self.options.rerank_model)
        return order

    async def _call(self, query: str, documents: list[str]) -> Any:
        from xflow_runtime._env import apply_offline_defaults

        apply_offline_defaults()
        import litellm

        litellm.suppress_debug_info = True
        kwargs: dict[str, Any] = {}
        if self.options.rerank_api_base:
            kwargs["api_base"] = self.options.rerank_api_base
        if self.options.rerank_api_key:
            kwargs["api_key"] = self.options.rerank_api_key
        return await litellm.arerank(model=self.options.rerank_model, query=query, documents=documents,
                                     max_retries=0, **kwargs)
