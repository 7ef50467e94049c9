"""The four predefined xFlow models selected by ``aiModel`` (temperature 0, 60 s timeout).

API keys come from the providers' standard environment variables (``OPENAI_API_KEY``,
``GROQ_API_KEY``, ``GEMINI_API_KEY``), read by litellm. Any other ``aiModel`` value is a litellm
model string (``anthropic/claude-3-5-sonnet-latest``, ``gpt-4o-mini``…) used as one target.
"""

from __future__ import annotations

from xflow_runtime.llm.config import DEFAULT_TIMEOUT, LLMGroup, LLMNode, LLMTarget

DEFAULT_AI_MODEL = "gpt-4o"
PRESET_PARAMS = {"temperature": 0.0, "timeout": DEFAULT_TIMEOUT}
PRESET_FALLBACK_CODES = frozenset({429, 400})

_OPENAI_GPT_4O = LLMTarget(model="openai/gpt-4o", params=PRESET_PARAMS)


def _with_openai_fallback(model: str) -> LLMGroup:
    return LLMGroup(mode="fallback", on_status_codes=PRESET_FALLBACK_CODES,
                    targets=(LLMTarget(model=model, params=PRESET_PARAMS), _OPENAI_GPT_4O))


PRESETS: dict[str, LLMNode] = {
    "gpt-4o": _OPENAI_GPT_4O,
    "llama3-70b-8192": _with_openai_fallback("groq/llama3-70b-8192"),
    "mixtral-8x7b-32768": _with_openai_fallback("groq/mixtral-8x7b-32768"),
    "gemini-1.5-pro-latest": _with_openai_fallback("gemini/gemini-1.5-pro-latest"),
}


def node_for_ai_model(ai_model: str) -> LLMNode:
    """The preset named ``ai_model``, or a single target for any other litellm model string."""
    preset = PRESETS.get(ai_model)
    if preset is not None:
        return preset
    return LLMTarget(model=ai_model, params={"timeout": DEFAULT_TIMEOUT})
