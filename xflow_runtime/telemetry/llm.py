"""The ``chat`` span of one litellm call: provider and model names as the conventions want them
(imported by :mod:`xflow_runtime.llm.client` only when tracing is on)."""

from __future__ import annotations

from typing import Any, Sequence
from urllib.parse import urlsplit

from xflow_runtime.telemetry.genai import ChatSpan, provider_name


def chat_span(telemetry: Any, litellm: Any, model: str, messages: Sequence[Any], tools: Sequence[Any] | None,
              api_base: str | None) -> ChatSpan:
    """``model`` is litellm's name (``provider/model`` or a bare name litellm knows)."""
    try:
        bare, provider, _, _ = litellm.get_llm_provider(model=model, api_base=api_base)
    except Exception:  # noqa: BLE001 - a model litellm cannot place: still traced
        provider, bare = (model.split("/", 1) if "/" in model else (None, model))
    return telemetry.chat(provider_name(provider), bare, messages, tools, _server(api_base))


def _server(api_base: str | None) -> tuple[str, int | None] | None:
    if not api_base:
        return None
    parts = urlsplit(api_base)
    if not parts.hostname:
        return None
    return parts.hostname, parts.port
