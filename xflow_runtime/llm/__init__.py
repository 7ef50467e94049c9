"""LLM calls for AI states: presets, ``llmConfig`` strategies, provider error mapping, usage.

Importing this package does not import litellm; :class:`~xflow_runtime.llm.client.LLMClient`
imports it on its first call.
"""

from xflow_runtime.llm.client import ChatRequest, ChatResult, LLMClient, LLMSettings
from xflow_runtime.llm.config import LLMGroup, LLMNode, LLMTarget, compile_llm_config
from xflow_runtime.llm.presets import DEFAULT_AI_MODEL, PRESETS, node_for_ai_model

__all__ = [
    "DEFAULT_AI_MODEL", "PRESETS", "ChatRequest", "ChatResult", "LLMClient", "LLMGroup", "LLMNode",
    "LLMSettings", "LLMTarget", "compile_llm_config", "node_for_ai_model",
]
