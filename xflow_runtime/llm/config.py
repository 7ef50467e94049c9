"""Compiled LLM configuration: the ``aiModel`` preset or the ``llmConfig`` tree of an AI state.

An :data:`LLMNode` is either an :class:`LLMTarget` (one provider + model) or an :class:`LLMGroup`
(a ``strategy`` over nested ``targets``). Compilation is pure and happens once, with the plan;
``apiKey`` stays a :class:`~xflow_runtime.plan.templates.Template` (usually ``${ $SECRETS.X }``)
evaluated at call time, so secrets never enter the plan or the instance history.
Decisions are in ``specs/llm.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Union

from xflow_runtime.errors import DefinitionError, ExpressionError
from xflow_runtime.plan.templates import Template, compile_template

StrategyMode = Literal["single", "fallback", "loadbalance"]
STRATEGY_MODES: tuple[str, ...] = ("single", "fallback", "loadbalance")

#: Seconds before an LLM call gives up, unless ``overrideParams.timeout`` says otherwise (the
#: xFlow presets' PT60S, applied to every configuration for predictability).
DEFAULT_TIMEOUT = 60.0

#: Portkey-style provider slugs (what xFlow writes) → litellm provider prefixes. Any other slug
#: is passed to litellm unchanged, so every litellm provider works under its own name.
PROVIDER_PREFIXES: dict[str, str] = {
    "openai": "openai",
    "groq": "groq",
    "google": "gemini",
    "gemini": "gemini",
    "vertex-ai": "vertex_ai",
    "anthropic": "anthropic",
    "azure-openai": "azure",
    "mistral-ai": "mistral",
    "together-ai": "together_ai",
    "fireworks-ai": "fireworks_ai",
    "perplexity-ai": "perplexity",
    "deepseek": "deepseek",
    "cohere": "cohere",
    "ollama": "ollama",
    "bedrock": "bedrock",
    "openrouter": "openrouter",
    "huggingface": "huggingface",
}

#: ``overrideParams`` keys that are xflow-runtime's own, not litellm parameters.
_TARGET_KEYS = ("provider", "apiKey", "overrideParams", "strategy", "targets", "weight", "baseUrl")


@dataclass(frozen=True, eq=False)  # identity hash: targets key the per-call api-key map
class LLMTarget:
    """One provider and model. ``model`` is the litellm model string (``groq/llama3-70b-8192``);
    ``params`` are litellm keyword arguments (``temperature``, ``max_tokens``, ``timeout``…)."""

    model: str
    api_key: Template | None = None
    base_url: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    weight: float = 1.0

    @property
    def provider(self) -> str:
        return self.model.split("/", 1)[0] if "/" in self.model else "openai"


@dataclass(frozen=True, eq=False)
class LLMGroup:
    """A strategy over targets: ``single`` uses the first, ``fallback`` tries them in order
    (moving on only for ``on_status_codes`` when given), ``loadbalance`` picks one by weight."""

    mode: StrategyMode
    targets: tuple["LLMNode", ...]
    on_status_codes: frozenset[int] | None = None
    weight: float = 1.0


LLMNode = Union[LLMTarget, LLMGroup]


def model_string(provider: str | None, model: str) -> str:
    """The litellm model string for ``provider`` + ``model`` (a model already carrying a known
    prefix, such as ``openai/gpt-4o``, is left alone)."""
    if provider is None:
        return model
    prefix = PROVIDER_PREFIXES.get(provider.lower(), provider.lower())
    if model.startswith(prefix + "/"):
        return model
    return f"{prefix}/{model}"


def compile_llm_config(raw: Any, *, default_model: str, where: str = "llmConfig") -> LLMNode:
    """Compile an ``llmConfig`` object. ``default_model`` (the state's ``aiModel``) is the model of
    any target whose ``overrideParams`` names none. A group's ``provider``, ``apiKey`` and
    ``overrideParams`` are inherited by its targets (a target's own values win)."""
    return _node(raw, inherited={}, default_model=default_model, where=where)


def _node(raw: Any, *, inherited: Mapping[str, Any], default_model: str, where: str) -> LLMNode:
    if not isinstance(raw, Mapping):
        raise _invalid(where, f"expected an object, found {type(raw).__name__}")
    unknown = sorted(set(raw) - set(_TARGET_KEYS))
    if unknown:
        raise _invalid(where, f"unknown keys {', '.join(unknown)} (allowed: {', '.join(_TARGET_KEYS)})")
    weight = _weight(raw.get("weight", 1), f"{where}/weight")
    params = raw.get("overrideParams") or {}
    if not isinstance(params, Mapping):
        raise _invalid(f"{where}/overrideParams", "expected an object")
    merged = {
        "provider": raw.get("provider", inherited.get("provider")),
        "apiKey": raw.get("apiKey", inherited.get("apiKey")),
        "baseUrl": raw.get("baseUrl", inherited.get("baseUrl")),
        "overrideParams": {**inherited.get("overrideParams", {}), **params},
    }
    targets = raw.get("targets")
    if targets is None:
        if raw.get("strategy") is not None:
            raise _invalid(where, "a 'strategy' needs 'targets'")
        return _target(merged, weight=weight, default_model=default_model, where=where)
    if not isinstance(targets, list) or not targets:
        raise _invalid(f"{where}/targets", "expected a non-empty list of targets")
    mode, codes = _strategy(raw.get("strategy"), f"{where}/strategy")
    children = tuple(
        _node(item, inherited=merged, default_model=default_model, where=f"{where}/targets/{i}")
        for i, item in enumerate(targets)
    )
    return LLMGroup(mode=mode, targets=children, on_status_codes=codes, weight=weight)


def _target(merged: Mapping[str, Any], *, weight: float, default_model: str, where: str) -> LLMTarget:
    params = dict(merged["overrideParams"])
    model = params.pop("model", None) or default_model
    if not isinstance(model, str) or not model:
        raise _invalid(f"{where}/overrideParams/model", "expected a model name")
    provider = merged["provider"]
    if provider is not None and not isinstance(provider, str):
        raise _invalid(f"{where}/provider", "expected a provider name such as openai, groq, google")
    params.setdefault("timeout", DEFAULT_TIMEOUT)
    api_key = merged["apiKey"]
    try:
        key_template = None if api_key is None else compile_template(api_key)
    except ExpressionError as error:
        raise _invalid(f"{where}/apiKey", str(error)) from None
    base_url = merged["baseUrl"]
    if base_url is not None and not isinstance(base_url, str):
        raise _invalid(f"{where}/baseUrl", "expected a URL string")
    return LLMTarget(model=model_string(provider, model), api_key=key_template, base_url=base_url,
                     params=params, weight=weight)


def _strategy(raw: Any, where: str) -> tuple[StrategyMode, frozenset[int] | None]:
    if raw is None:
        return "single", None
    if not isinstance(raw, Mapping):
        raise _invalid(where, "expected an object {mode, onStatusCodes}")
    mode = raw.get("mode", "single")
    if mode not in STRATEGY_MODES:
        raise _invalid(f"{where}/mode", f"{mode!r} is not one of {', '.join(STRATEGY_MODES)}")
    codes = raw.get("onStatusCodes")
    if codes is None:
        return mode, None
    if not isinstance(codes, list) or not all(isinstance(code, int) and not isinstance(code, bool) for code in codes):
        raise _invalid(f"{where}/onStatusCodes", "expected a list of HTTP status codes")
    return mode, frozenset(codes)


def _weight(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise _invalid(where, f"expected a number ≥ 0, found {value!r}")
    return float(value)


def _invalid(where: str, message: str) -> DefinitionError:
    return DefinitionError([f"{where}: {message}"])
