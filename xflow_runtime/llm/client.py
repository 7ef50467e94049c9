"""One chat-completion call through litellm, routed over an :data:`LLMNode` tree.

litellm is imported on the first call (after :func:`xflow_runtime._env.apply_offline_defaults`).
The result is a plain JSON-able dict (:class:`ChatResult`), because the durable engine records it.

Settings worth knowing (``specs/llm.md``):
- the provider SDK's own retries are off (``max_retries=0``): retrying is the workflow's job
  (``retries`` / ``onErrors``) and fallbacks are the ``llmConfig`` strategy's;
- :class:`LLMSettings.api_base` sends every call to one OpenAI-compatible server (the scripted
  model server behind ``xflow run --llm-script``, or a gateway); the model keeps its name;
- structured output uses ``response_format: json_schema`` when litellm says the model supports
  it, else JSON mode plus the schema in the system message.
"""

from __future__ import annotations

import gc
import json
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping, Sequence, TypedDict

from xflow_runtime.errors import WorkflowError
from xflow_runtime.llm.config import LLMNode, LLMTarget
from xflow_runtime.llm.errors import provider_error
from xflow_runtime.llm.routing import call_tree

JSON_MODE_INSTRUCTION = "Respond only with a JSON object that conforms to this JSON Schema:\n"


class Usage(TypedDict, total=False):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost: float | None


class ChatResult(TypedDict):
    message: dict[str, Any]  # {"role": "assistant", "content": str | None, "tool_calls"?: [...]}
    finish_reason: str | None
    model: str
    usage: Usage
    attempts: list[dict[str, Any]]  # failed targets before the one that answered
    latency_ms: float


@dataclass(frozen=True)
class ChatRequest:
    messages: Sequence[Mapping[str, Any]]
    tools: Sequence[Mapping[str, Any]] | None = None
    tool_choice: str | None = None  # "auto" / "none"
    output_schema: Mapping[str, Any] | None = None
    output_name: str = "agent_output"


@dataclass(frozen=True)
class LLMSettings:
    """Process-wide LLM settings of a runtime. ``api_base``/``api_key`` redirect every call to
    one OpenAI-compatible endpoint (the model name is kept, the provider becomes ``openai``)."""

    api_base: str | None = None
    api_key: str | None = None
    extra_params: Mapping[str, Any] = field(default_factory=dict)


_litellm_module: Any = None


def _litellm() -> Any:
    global _litellm_module
    if _litellm_module is None:
        from xflow_runtime._env import apply_offline_defaults

        apply_offline_defaults()
        import litellm

        litellm.suppress_debug_info = True
        # litellm's import leaves ~370k objects alive for the life of the process; every full
        # garbage collection would walk them again. With many concurrent calls (a high allocation
        # rate) that was a quarter of the CPU (bench/bench_agents.py, specs/llm.md §6). Moving what
        # is alive now to the permanent generation changes no behaviour: refcounting still frees
        # (only cycles already garbage at this moment stay). XFLOW_GC_FREEZE=0 opts out, for an
        # embedder that manages the collector itself.
        if os.environ.get("XFLOW_GC_FREEZE", "1") != "0":
            gc.freeze()
        _litellm_module = litellm
    return _litellm_module


def preload() -> None:
    """Import litellm now (seconds of CPU): a server does it at startup, off its event loop,
    instead of in the first LLM call."""
    _litellm()


def model_for_endpoint(model: str) -> str:
    """The litellm model name for a call to one OpenAI-compatible endpoint (``api_base``): the
    name as written, provider ``openai`` (a ``provider/`` prefix is dropped). Shared with the
    long-term memory's extraction and embedding calls."""
    return "openai/" + model.split("/", 1)[-1]


class LLMClient:
    """Calls the model(s) of an :data:`LLMNode`. ``rng`` drives load balancing (seed it in tests)."""

    def __init__(self, settings: LLMSettings | None = None, *, rng: random.Random | None = None):
        self.settings = settings or LLMSettings()
        self.rng = rng or random.Random()
        #: Awaited with the model's name before each call: a fleet's rate limit (engine/rate_limit.py).
        self.limiter: Callable[[str], Awaitable[None]] | None = None

    async def complete(self, node: LLMNode, request: ChatRequest, api_keys: Mapping[LLMTarget, str | None], *,
                       on_delta: Callable[[str], None] | None = None, telemetry: Any = None) -> ChatResult:
        """Answer ``request`` from ``node``. ``api_keys`` holds each target's evaluated ``apiKey``
        (the caller evaluates the templates, because only it knows the data and ``$SECRETS``).
        With ``on_delta`` the call streams and ``on_delta`` gets each piece of text as it arrives
        (the result is the same assembled answer). With ``telemetry`` (a runtime's
        :class:`~xflow_runtime.telemetry.spans.Telemetry`) every provider attempt is a ``chat`` span."""
        attempts: list[dict[str, Any]] = []
        started = time.perf_counter()

        async def call_target(target: LLMTarget) -> ChatResult:
            try:
                return await self._call(target, request, api_keys.get(target), on_delta, telemetry)
            except WorkflowError as error:
                attempts.append({"model": target.model, "code": error.code, "status": error.status})
                raise

        result = await call_tree(node, call_target, self.rng)
        result["attempts"] = attempts
        result["latency_ms"] = round((time.perf_counter() - started) * 1000, 3)
        return result

    async def _call(self, target: LLMTarget, request: ChatRequest, api_key: str | None,
                    on_delta: Callable[[str], None] | None = None, telemetry: Any = None) -> ChatResult:
        litellm = _litellm()
        model = target.model
        if self.limiter is not None:
            await self.limiter(model)
        kwargs: dict[str, Any] = {**target.params, **self.settings.extra_params}
        base = target.base_url
        if self.settings.api_base:
            model = model_for_endpoint(model)
            base = self.settings.api_base
            api_key = self.settings.api_key or api_key or "scripted"
        if base:
            kwargs["api_base"] = base
        if api_key:
            kwargs["api_key"] = api_key
        messages = [dict(message) for message in request.messages]
        if request.tools:
            kwargs["tools"] = list(request.tools)
            if request.tool_choice:
                kwargs["tool_choice"] = request.tool_choice
        if request.output_schema is not None:
            kwargs["response_format"] = _response_format(litellm, model, request, messages)
        if telemetry is None:
            return _result(litellm, await _send(litellm, target, on_delta, model, messages, kwargs), target.model)
        from xflow_runtime.telemetry.llm import chat_span  # our span, not litellm's callback (specs/observability.md)

        with chat_span(telemetry, litellm, model, messages, request.tools, kwargs.get("api_base")) as chat:
            try:
                response = await _send(litellm, target, on_delta, model, messages, kwargs)
            except WorkflowError as error:
                chat.failed(error.code or "error")
                raise
            result = _result(litellm, response, target.model)
            chat.response(response, result)
        return result


async def _send(litellm: Any, target: LLMTarget, on_delta: Callable[[str], None] | None, model: str,
                messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> Any:
    try:
        if on_delta is None:
            return await litellm.acompletion(model=model, messages=messages, max_retries=0,
                                             _skip_mcp_handler=True, **kwargs)
        return await _streamed(litellm, on_delta, model=model, messages=messages, max_retries=0,
                               _skip_mcp_handler=True, **kwargs)
    except Exception as error:  # every provider failure becomes a WorkflowError
        raise provider_error(error, target.model) from None


async def _streamed(litellm: Any, on_delta: Callable[[str], None], **kwargs: Any) -> Any:
    """A streamed call, assembled into the response a plain call returns (usage included)."""
    stream = await litellm.acompletion(stream=True, stream_options={"include_usage": True}, **kwargs)
    chunks = []
    async for chunk in stream:
        chunks.append(chunk)
        text = chunk.choices[0].delta.content if chunk.choices else None
        if text:
            on_delta(text)
    return litellm.stream_chunk_builder(chunks, messages=kwargs["messages"])


def _response_format(litellm: Any, model: str, request: ChatRequest, messages: list[dict[str, Any]]) -> dict[str, Any]:
    schema = dict(request.output_schema or {})
    if _supports_response_schema(litellm, model):
        return {"type": "json_schema", "json_schema": {"name": request.output_name, "schema": schema, "strict": False}}
    instruction = JSON_MODE_INSTRUCTION + json.dumps(schema, separators=(",", ":"))
    if messages and messages[0].get("role") == "system":
        messages[0]["content"] = f"{messages[0].get('content') or ''}\n\n{instruction}".lstrip()
    else:
        messages.insert(0, {"role": "system", "content": instruction})
    return {"type": "json_object"}


_SCHEMA_SUPPORT: dict[str, bool] = {}


def _supports_response_schema(litellm: Any, model: str) -> bool:
    # litellm's lookup walks its model map (~1 ms); the answer never changes within a process.
    known = _SCHEMA_SUPPORT.get(model)
    if known is None:
        try:
            known = bool(litellm.supports_response_schema(model=model))
        except Exception:  # unknown model: litellm cannot tell
            known = False
        _SCHEMA_SUPPORT[model] = known
    return known


def _result(litellm: Any, response: Any, model: str) -> ChatResult:
    choice = response.choices[0]
    raw = choice.message
    message: dict[str, Any] = {"role": "assistant", "content": raw.content}
    if raw.tool_calls:
        message["tool_calls"] = [
            {"id": call.id, "type": "function",
             "function": {"name": call.function.name, "arguments": call.function.arguments or "{}"}}
            for call in raw.tool_calls
        ]
    usage_raw = getattr(response, "usage", None)
    usage: Usage = {
        "prompt_tokens": int(getattr(usage_raw, "prompt_tokens", 0) or 0),
        "completion_tokens": int(getattr(usage_raw, "completion_tokens", 0) or 0),
        "total_tokens": int(getattr(usage_raw, "total_tokens", 0) or 0),
        "cost": _cost(litellm, response, model),
    }
    return {"message": message, "finish_reason": choice.finish_reason, "model": model, "usage": usage,
            "attempts": [], "latency_ms": 0.0}


def _cost(litellm: Any, response: Any, model: str) -> float | None:
    hidden = getattr(response, "_hidden_params", None) or {}
    if isinstance(hidden.get("response_cost"), (int, float)):
        return float(hidden["response_cost"])  # litellm already priced this response
    try:
        return float(litellm.completion_cost(completion_response=response, model=model))
    except Exception:  # a model missing from litellm's price list has no known cost
        return None


_default_client: LLMClient | None = None


def configure_default_client(client: LLMClient | LLMSettings | None) -> None:
    """Set the client AI states use when the runtime provides none (``services.llm``).
    ``xflow run --llm-script`` uses this to answer from the scripted model server."""
    global _default_client
    _default_client = LLMClient(client) if isinstance(client, LLMSettings) else client


def default_client() -> LLMClient:
    global _default_client
    if _default_client is None:
        _default_client = LLMClient()
    return _default_client
