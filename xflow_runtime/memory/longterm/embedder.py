"""Embeddings through litellm (imported on first use). Failures degrade to keyword search.

Vectors are L2-normalised here, so cosine similarity is a dot product everywhere (SQLite's
in-process search, the dedup check) and pgvector's cosine distance agrees with it.

Texts are embedded for a purpose (``document`` or ``query``) in the model's mode for it
(:mod:`~xflow_runtime.memory.longterm.embedding_modes`); :attr:`Embedded.model` is then the
*space key* the vectors are stored and searched under, never the bare model name alone.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Sequence

from xflow_runtime.memory.longterm.config import LongTermOptions
from xflow_runtime.memory.longterm.embedding_modes import Purpose, space_key

_log = logging.getLogger("xflow_runtime.memory.longterm")


@dataclass(frozen=True)
class Embedded:
    model: str  # the space key (model + document/query modes), what ``embedding_model`` stores
    vectors: list[list[float]]

    @property
    def dimensions(self) -> int:
        return len(self.vectors[0]) if self.vectors else 0


def normalise(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(value * value for value in vector))
    return [float(value) / norm for value in vector] if norm else [float(value) for value in vector]


class Embedder:
    """Calls ``litellm.aembedding`` with the options' model and endpoint."""

    def __init__(self, options: LongTermOptions):
        self.options = options

    @property
    def model(self) -> str | None:
        return self.options.embedding_model

    @property
    def space(self) -> str | None:
        """The space key new vectors are stored under (``None``: no embedding model)."""
        model = self.options.embedding_model
        return space_key(model, self.options.embedding_modes) if model else None

    async def embed(self, texts: Sequence[str], purpose: Purpose = "document") -> Embedded | None:
        """Vectors for ``texts`` embedded as ``purpose``, or ``None`` when no model is
        configured or the call failed (logged; callers fall back to keyword search)."""
        if not self.options.embedding_model or not texts:
            return None
        modes = self.options.embedding_modes
        try:
            response = await self._call([modes.text(text, purpose) for text in texts], modes.input_type(purpose))
            vectors = [normalise(item["embedding"] if isinstance(item, dict) else item.embedding)
                       for item in response.data]
        except Exception as error:  # provider down, bad key, odd payload: keyword search still works
            _log.warning("embedding with %s failed (%s); keyword search only for this call",
                         self.options.embedding_model, type(error).__name__)
            return None
        if len(vectors) != len(texts) or len({len(v) for v in vectors}) != 1:
            _log.warning("embedding with %s returned malformed vectors; ignored", self.options.embedding_model)
            return None
        return Embedded(space_key(self.options.embedding_model, modes), vectors)

    async def _call(self, texts: list[str], input_type: str | None) -> Any:
        from xflow_runtime._env import apply_offline_defaults

        apply_offline_defaults()
        import litellm

        litellm.suppress_debug_info = True
        # one quick attempt: a failure degrades to keyword search instead of stalling the turn
        kwargs: dict[str, Any] = {"max_retries": 0, **self.options.extra_params}
        model = self.options.embedding_model
        if self.options.api_base and model is not None:  # one OpenAI-compatible endpoint: the agent's client's rule
            from xflow_runtime.llm.client import model_for_endpoint

            kwargs["api_base"] = self.options.api_base
            model = model_for_endpoint(model)
        if self.options.api_key:
            kwargs["api_key"] = self.options.api_key
        if self.options.embedding_dimensions:
            kwargs["dimensions"] = self.options.embedding_dimensions
        if input_type is not None:  # litellm maps it per provider (Cohere, Voyage, …) or forwards it
            kwargs["input_type"] = input_type
        return await litellm.aembedding(model=model, input=texts, **kwargs)
