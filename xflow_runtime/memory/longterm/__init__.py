"""Long-term memory: memories the agent manages (tools + a prompt block), facts extracted in the
background, hybrid retrieval (pgvector/FTS or SQLite FTS5/in-process vectors, fused with RRF),
and privacy (scoping, consent, erasure).

Public API::

    from xflow_runtime.memory.longterm import LongTermMemory, LongTermOptions, MemoryScope

See ``specs/memory-longterm.md``.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "LongTermMemory": "memory",
    "LongTermOptions": "config", "LongTermMemorySettings": "config", "FactExtractionSettings": "config",
    "MemoryScope": "scope",
    "Memory": "records", "MemoryPage": "records", "SearchHit": "records", "ErasureReceipt": "records",
    "WriteResult": "records",
    "LongTermMemoryError": "errors", "MemoryNotFound": "errors", "MemoryConflict": "errors",
    "render_memory_block": "block", "with_memory_block": "block", "DEFAULT_TEMPLATE": "block",
    "reciprocal_rank_fusion": "fusion",
    "ExtractedFact": "extraction_prompt", "parse_facts": "extraction_prompt",
    "TOOL_NAMES": "tools", "TOOL_SCHEMAS": "tools",
    "StepMemory": "step",
    "EmbeddingModes": "embedding_modes",
    "ReindexReport": "reindex",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'xflow_runtime.memory.longterm' has no attribute {name!r}")
    return getattr(importlib.import_module(f"xflow_runtime.memory.longterm.{module}"), name)


__all__ = sorted(_EXPORTS)
