"""Runtime constructor options checked and converted once, at construction."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xflow_runtime.llm.client import LLMClient, LLMSettings
    from xflow_runtime.memory.longterm import LongTermOptions


def llm_client(llm: "LLMSettings | LLMClient | None") -> "LLMClient | None":
    """One client per runtime (an ``LLMSettings`` is turned into a client once, here)."""
    if llm is None:
        return None
    from xflow_runtime.llm.client import LLMClient, LLMSettings

    return LLMClient(llm) if isinstance(llm, LLMSettings) else llm


def long_term_options(options: "LongTermOptions | None") -> "LongTermOptions | None":
    """Checked here, so a wrong value fails at construction, not when the first agent runs."""
    if options is None:
        return None
    from xflow_runtime.memory.longterm import LongTermOptions

    if not isinstance(options, LongTermOptions):
        raise TypeError(f"long_term must be a LongTermOptions, not {type(options).__name__}")
    return options
