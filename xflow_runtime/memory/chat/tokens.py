"""Token counts of stored messages, computed once per (message, encoding) and cached.

Counting follows OpenAI's chat accounting as ``litellm.token_counter`` implements it, so the two
agree exactly for OpenAI models: 3 tokens per message, plus the tokens of every string field
(``role``, ``content``, ``tool_call_id``, ``name`` (+1)), plus the ``arguments`` of each tool call,
plus the text of each text content part. Non-text parts (images, audio, files) count a fixed
:data:`NON_TEXT_PART_TOKENS`. The 3 tokens that prime the reply belong to the request, not to
the window, and are not counted here.

Models tiktoken knows use their own encoding (``o200k_base`` for gpt-4o/o-series/gpt-4.1/gpt-5,
``cl100k_base`` for gpt-4 and gpt-3.5). Any other model (Claude, Gemini, Llama, …) is estimated
with ``o200k_base`` scaled by :data:`APPROXIMATION_SCALE` and rounded up — deliberately an
over-estimate, because an under-count can push a request past the model's context limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Mapping

TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
NON_TEXT_PART_TOKENS = 85  # OpenAI's charge for a low-detail image; a floor for other media
APPROXIMATION_ENCODING = "o200k_base"
APPROXIMATION_SCALE = 1.2
#: Long texts are encoded in chunks of this many characters, as litellm does: tiktoken's BPE is
#: quadratic on long runs of one character (a multi-MB tool result could take minutes); chunking
#: keeps it linear at a drift of at most one token per chunk boundary, and keeps our counts equal
#: to litellm's.
ENCODE_CHUNK_CHARS = 1024


@lru_cache(maxsize=8)
def _encoder(encoding: str) -> Callable[[str], int]:
    from xflow_runtime._env import apply_offline_defaults

    apply_offline_defaults()
    import tiktoken

    enc = tiktoken.get_encoding(encoding)

    def count(text: str) -> int:
        if len(text) <= ENCODE_CHUNK_CHARS:
            return len(enc.encode(text, disallowed_special=()))
        return sum(len(enc.encode(text[start:start + ENCODE_CHUNK_CHARS], disallowed_special=()))
                   for start in range(0, len(text), ENCODE_CHUNK_CHARS))

    return count


@lru_cache(maxsize=256)
def _encoding_for_model(model: str) -> str | None:
    from xflow_runtime._env import apply_offline_defaults

    apply_offline_defaults()
    import tiktoken

    name = model.rsplit("/", 1)[-1]  # "openai/gpt-4o", "azure/gpt-4" → the model's own name
    try:
        return tiktoken.encoding_name_for_model(name)
    except KeyError:
        return None


@dataclass(frozen=True)
class TokenCounter:
    """Counts one message for one model. ``encoding`` is also the key of the per-message cache;
    ``scale`` (1.0 when exact) is applied when a window is resolved, so the cache holds raw
    tiktoken counts only."""

    encoding: str
    scale: float = 1.0

    @classmethod
    def for_model(cls, model: str | None) -> "TokenCounter":
        encoding = _encoding_for_model(model) if model else None
        if encoding is None:
            return cls(APPROXIMATION_ENCODING, APPROXIMATION_SCALE)
        return cls(encoding)

    @property
    def exact(self) -> bool:
        return self.scale == 1.0

    def raw_count(self, message: Mapping[str, Any]) -> int:
        count = _encoder(self.encoding)
        total = TOKENS_PER_MESSAGE + count(message["role"])
        content = message.get("content")
        if isinstance(content, str):
            total += count(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, str):
                    total += count(part)
                elif isinstance(part, Mapping) and part.get("type") == "text":
                    total += count(str(part.get("text", "")))
                else:
                    total += NON_TEXT_PART_TOKENS
        for call in message.get("tool_calls") or ():
            total += count(call["function"]["arguments"])
        if message.get("tool_call_id"):
            total += count(message["tool_call_id"])
        if message.get("name"):
            total += count(message["name"]) + TOKENS_PER_NAME
        return total

    def scaled(self, raw: int) -> int:
        return raw if self.exact else math.ceil(raw * self.scale)

    def count(self, message: Mapping[str, Any]) -> int:
        return self.scaled(self.raw_count(message))
