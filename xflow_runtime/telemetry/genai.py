"""The GenAI part of our telemetry: ``chat`` spans, their attributes and the two client metrics
(OpenTelemetry GenAI semantic conventions, ``semantic-conventions-genai`` 1.42; imported only
when tracing is on).

A ``chat {model}`` span wraps one provider attempt of an ``aiagent`` LLM call (so a fallback walk
shows every attempt); it is opened inside the recorded step, so a durable replay never opens it.
Messages and tool definitions are recorded only with content capture on, as the JSON strings
of the conventions' message schema.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from opentelemetry import metrics
from opentelemetry.trace import SpanKind

if TYPE_CHECKING:
    from xflow_runtime.telemetry.spans import Telemetry

#: litellm provider → ``gen_ai.provider.name`` (well-known values of the conventions); others as litellm names them.
PROVIDERS = {
    "openai": "openai", "text-completion-openai": "openai", "anthropic": "anthropic", "bedrock": "aws.bedrock",
    "bedrock_converse": "aws.bedrock", "azure": "azure.ai.openai", "azure_ai": "azure.ai.inference",
    "cohere": "cohere", "cohere_chat": "cohere", "deepseek": "deepseek", "gemini": "gcp.gemini",
    "vertex_ai": "gcp.vertex_ai", "vertex_ai_beta": "gcp.vertex_ai", "groq": "groq", "watsonx": "ibm.watsonx.ai",
    "mistral": "mistral_ai", "perplexity": "perplexity", "xai": "x_ai",
}
#: The conventions' advisory bucket boundaries.
TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]


def provider_name(litellm_provider: str | None) -> str:
    if not litellm_provider:
        return "unknown"
    return PROVIDERS.get(litellm_provider, litellm_provider)


class Instruments:
    """``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration``."""

    def __init__(self, meter_provider: Any = None) -> None:
        from xflow_runtime import __version__

        meter = (meter_provider or metrics.get_meter_provider()).get_meter("xflow_runtime", __version__)
        self.tokens = meter.create_histogram("gen_ai.client.token.usage", unit="{token}",
                                             description="Number of input and output tokens used",
                                             explicit_bucket_boundaries_advisory=TOKEN_BUCKETS)
        self.duration = meter.create_histogram("gen_ai.client.operation.duration", unit="s",
                                               description="GenAI operation duration",
                                               explicit_bucket_boundaries_advisory=DURATION_BUCKETS)


class ChatSpan:
    """A ``with`` block around one provider call: the span, then the metrics at its end."""

    def __init__(self, telemetry: "Telemetry", provider: str, model: str, messages: Sequence[Any],
                 tools: Sequence[Any] | None, server: tuple[str, int | None] | None) -> None:
        self.telemetry = telemetry
        self.attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider,
                                           "gen_ai.request.model": model}
        if server is not None:
            self.attributes["server.address"] = server[0]
            if server[1] is not None:
                self.attributes["server.port"] = server[1]
        if telemetry.capture_content:
            system, conversation = input_messages(messages)
            if system:
                self.attributes["gen_ai.system_instructions"] = as_json(system)
            self.attributes["gen_ai.input.messages"] = as_json(conversation)
            if tools:
                self.attributes["gen_ai.tool.definitions"] = as_json(list(tools))
        self.metric_attributes = {key: self.attributes[key] for key in
                                  ("gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model")}
        self._block: Any = None
        self.handle: Any = None
        self._started = 0.0

    def __enter__(self) -> "ChatSpan":
        model = self.attributes["gen_ai.request.model"]
        self._block = self.telemetry.span(f"chat {model}", self.attributes, kind=SpanKind.CLIENT)
        self.handle = self._block.__enter__()
        self._started = time.perf_counter()
        return self

    def __exit__(self, *exc_info: Any) -> bool:
        elapsed = time.perf_counter() - self._started
        if exc_info[1] is not None and "error.type" not in self.metric_attributes:
            code = getattr(exc_info[1], "code", None)
            self.metric_attributes["error.type"] = str(code) if code else type(exc_info[1]).__name__
        self.telemetry.metrics.duration.record(elapsed, self.metric_attributes)
        return bool(self._block.__exit__(*exc_info))

    def response(self, response: Any, result: Mapping[str, Any]) -> None:
        """The attributes of an answer (and its token metrics)."""
        handle = self.handle
        response_model = getattr(response, "model", None)
        if isinstance(response_model, str) and response_model:
            handle.set("gen_ai.response.model", response_model)
            self.metric_attributes["gen_ai.response.model"] = response_model
        response_id = getattr(response, "id", None)
        if isinstance(response_id, str) and response_id:
            handle.set("gen_ai.response.id", response_id)
        if result.get("finish_reason"):
            handle.set("gen_ai.response.finish_reasons", [str(result["finish_reason"])])
        usage = result.get("usage") or {}
        tokens = {"input": usage.get("prompt_tokens"), "output": usage.get("completion_tokens")}
        if tokens["input"] is not None:
            handle.set("gen_ai.usage.input_tokens", int(tokens["input"]))
        if tokens["output"] is not None:
            handle.set("gen_ai.usage.output_tokens", int(tokens["output"]))
        if usage.get("cost") is not None:  # not in the conventions: litellm's price, in USD
            handle.set("xflow.gen_ai.usage.cost", float(usage["cost"]))
        for kind, count in tokens.items():
            if count is not None:
                self.telemetry.metrics.tokens.record(int(count), {**self.metric_attributes, "gen_ai.token.type": kind})
        if self.telemetry.capture_content:
            output = {"role": "assistant", "parts": _parts(result.get("message") or {}),
                      "finish_reason": str(result.get("finish_reason") or "stop")}
            handle.set("gen_ai.output.messages", as_json([output]))

    def failed(self, code: str) -> None:
        self.metric_attributes["error.type"] = code
        self.handle.fail(code)


def input_messages(messages: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system instructions, the other messages) in the conventions' shape."""
    system: list[dict[str, Any]] = []
    conversation: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            system.append({"type": "text", "content": str(message.get("content") or "")})
        elif role == "tool":
            conversation.append({"role": "tool", "parts": [{"type": "tool_call_response",
                                                           "id": message.get("tool_call_id"),
                                                           "response": message.get("content")}]})
        else:
            conversation.append({"role": role, "parts": _parts(message)})
    return system, conversation


def _parts(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if message.get("content"):
        parts.append({"type": "text", "content": message["content"]})
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts.append({"type": "tool_call", "id": call.get("id"), "name": function.get("name"),
                      "arguments": function.get("arguments")})
    return parts


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
