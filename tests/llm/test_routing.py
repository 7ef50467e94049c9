"""llmConfig strategies through litellm against the scripted server: fallback, loadbalance, errors."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from xflow_runtime.errors import DefinitionError
from xflow_runtime.llm import ChatRequest, LLMClient, LLMSettings, compile_llm_config, node_for_ai_model
from xflow_runtime.llm.config import LLMGroup, LLMTarget
from xflow_runtime.llm.routing import falls_back, pick_weighted
from xflow_runtime.errors import WorkflowError
from tests.agent.support import run

HELLO = ChatRequest(messages=[{"role": "user", "content": "hi"}])


def config(raw: dict):
    return compile_llm_config(raw, default_model="gpt-4o")


async def test_fallback_on_a_listed_status_moves_to_the_next_target(scripted_model):
    scripted_model.set_script({"default": "from whoever answers"})
    scripted_model.fail_model("primary", status=429)
    node = config({"strategy": {"mode": "fallback", "onStatusCodes": [429, 500]}, "targets": [
        {"provider": "openai", "overrideParams": {"model": "primary"}},
        {"provider": "openai", "overrideParams": {"model": "secondary", "temperature": 0.2}},
    ]})
    result = await LLMClient(LLMSettings(api_base=scripted_model.api_base)).complete(node, HELLO, {})
    assert result["model"] == "openai/secondary"
    assert result["attempts"] == [{"model": "openai/primary", "code": "429", "status": 429}]
    bodies = [r.body for r in scripted_model.chat_requests]
    assert [b["model"] for b in bodies] == ["primary", "secondary"] and bodies[1]["temperature"] == 0.2


async def test_fallback_does_not_move_on_for_an_unlisted_status(scripted_model):
    scripted_model.fail_model("primary", status=401, message="bad key")
    node = config({"strategy": {"mode": "fallback", "onStatusCodes": [429]}, "targets": [
        {"overrideParams": {"model": "primary"}}, {"overrideParams": {"model": "secondary"}}]})
    with pytest.raises(WorkflowError) as raised:
        await LLMClient(LLMSettings(api_base=scripted_model.api_base)).complete(node, HELLO, {})
    assert (raised.value.code, raised.value.status) == ("401", 401)
    assert "bad key" in str(raised.value)
    assert len(scripted_model.chat_requests) == 1


async def test_presets_fall_back_from_groq_to_openai_on_429(scripted_model):
    scripted_model.set_script(["answered by gpt-4o"])
    scripted_model.fail_model("llama3-70b-8192", status=429)
    result = await LLMClient(LLMSettings(api_base=scripted_model.api_base)).complete(
        node_for_ai_model("llama3-70b-8192"), HELLO, {})
    assert result["model"] == "openai/gpt-4o" and result["message"]["content"] == "answered by gpt-4o"
    assert [r.body["temperature"] for r in scripted_model.chat_requests] == [0.0, 0.0]


def test_preset_shapes():
    gemini = node_for_ai_model("gemini-1.5-pro-latest")
    assert isinstance(gemini, LLMGroup) and gemini.mode == "fallback" and gemini.on_status_codes == {429, 400}
    assert [t.model for t in gemini.targets] == ["gemini/gemini-1.5-pro-latest", "openai/gpt-4o"]
    assert all(t.params == {"temperature": 0.0, "timeout": 60.0} for t in gemini.targets)
    assert node_for_ai_model("anthropic/claude-3-5-sonnet-latest").model == "anthropic/claude-3-5-sonnet-latest"


async def test_loadbalance_follows_weights(scripted_model):
    scripted_model.set_script({"default": "ok"})
    node = config({"strategy": {"mode": "loadbalance"}, "targets": [
        {"weight": 0.7, "overrideParams": {"model": "heavy"}},
        {"weight": 0.2, "overrideParams": {"model": "light"}},
        {"weight": 0.1, "overrideParams": {"model": "tiny"}}]})
    client = LLMClient(LLMSettings(api_base=scripted_model.api_base), rng=random.Random(7))
    for _ in range(200):
        await client.complete(node, HELLO, {})
    counts = Counter(r.body["model"] for r in scripted_model.chat_requests)
    expected = {"heavy": 140, "light": 40, "tiny": 20}
    chi_square = sum((counts[m] - e) ** 2 / e for m, e in expected.items())
    assert chi_square < 13.8, counts  # p = 0.001 for 2 degrees of freedom


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(min_value=0.01, max_value=10), min_size=2, max_size=5), st.integers(0, 2**32))
def test_weighted_pick_is_proportional(weights, seed):
    targets = tuple(LLMTarget(model=f"m{i}", weight=w) for i, w in enumerate(weights))
    rng = random.Random(seed)
    draws = Counter(pick_weighted(targets, rng).model for _ in range(4000))
    total = sum(weights)
    for i, weight in enumerate(weights):
        expected = 4000 * weight / total
        assert abs(draws[f"m{i}"] - expected) < 6 * (expected ** 0.5) + 5


async def test_nested_groups_fall_back_into_a_load_balanced_group(scripted_model):
    scripted_model.set_script({"default": "ok"})
    scripted_model.fail_model("first", status=500)
    node = config({"strategy": {"mode": "fallback"}, "targets": [
        {"overrideParams": {"model": "first"}},
        {"strategy": {"mode": "loadbalance"}, "overrideParams": {"max_tokens": 50}, "targets": [
            {"weight": 1, "overrideParams": {"model": "lb-a"}}, {"weight": 0, "overrideParams": {"model": "lb-b"}}]}]})
    result = await LLMClient(LLMSettings(api_base=scripted_model.api_base)).complete(node, HELLO, {})
    assert result["model"] == "lb-a"  # no provider: litellm infers it
    assert scripted_model.chat_requests[1].body["max_tokens"] == 50  # inherited from the group


async def test_api_key_from_secrets_is_sent_and_timeouts_map_to_code_timeout(scripted_model):
    scripted_model.record_authorization = True
    scripted_model.set_script([{"text": "slow", "latency": 1.5}])
    workflow = """
start: ask
secrets: [OPENAI_KEY]
states:
  - name: ask
    type: aiagent
    agentName: a
    userMessage: hi
    llmConfig:
      provider: openai
      apiKey: '${ $SECRETS.OPENAI_KEY }'
      baseUrl: BASE
      overrideParams: {model: gpt-4o-mini, timeout: 0.3}
    agentOutcomes: [{finish: true}]
    end: true
""".replace("BASE", scripted_model.api_base)
    result = await run(workflow, scripted_model, llm=LLMClient(), secrets={"OPENAI_KEY": "sk-from-secrets"})
    assert result.status == "failed"
    assert (result.error["code"], result.error["status"]) == ("timeout", 408)
    assert "sk-from-secrets" not in str(result.error)
    assert scripted_model.chat_requests[0].headers["authorization"] == "Bearer sk-from-secrets"


async def test_provider_errors_reach_on_errors_by_status_code(scripted_model):
    scripted_model.fail_next(1, status=503)
    scripted_model.set_script(["unused"])
    result = await run("""
start: ask
errors: [{name: unavailable, code: '503'}]
states:
  - name: ask
    type: aiagent
    agentName: a
    userMessage: hi
    agentOutcomes: [{finish: true}]
    onErrors: [{errorRef: unavailable, transition: sorry}]
    end: true
  - {name: sorry, type: inject, data: {sorry: true}, end: true}
""", scripted_model)
    assert result.output == {"sorry": True}


def test_falls_back_rules():
    error = WorkflowError("x", code="429", status=429)
    assert falls_back(error, None) and falls_back(error, frozenset({429})) and not falls_back(error, frozenset({500}))
    assert not falls_back(WorkflowError("x", code="connection"), frozenset({500}))


@pytest.mark.parametrize("raw, message", [
    ({"strategy": {"mode": "roundrobin"}, "targets": [{}]}, "'roundrobin' is not one of"),
    ({"strategy": {"mode": "fallback"}}, "a 'strategy' needs 'targets'"),
    ({"targets": []}, "non-empty list"),
    ({"weight": -1}, "expected a number ≥ 0"),
    ({"provider": "openai", "apikey": "x"}, "unknown keys apikey"),
    ({"strategy": {"onStatusCodes": ["429"]}, "targets": [{}]}, "list of HTTP status codes"),
])
def test_config_errors(raw, message):
    with pytest.raises(DefinitionError, match=message):
        config(raw)


def test_provider_slugs_map_to_litellm_prefixes():
    assert config({"provider": "google", "overrideParams": {"model": "gemini-1.5-pro"}}).model == "gemini/gemini-1.5-pro"
    assert config({"provider": "groq"}).model == "groq/gpt-4o"
    assert config({"provider": "azure-openai", "overrideParams": {"model": "dep"}}).model == "azure/dep"
    assert config({"overrideParams": {"model": "openai/gpt-4o"}, "provider": "openai"}).model == "openai/gpt-4o"


@pytest.mark.parametrize("base_variable", ["OPENAI_BASE_URL", "OPENAI_API_BASE"])
async def test_standard_provider_environment_variables_work(scripted_model, monkeypatch, base_variable):
    scripted_model.record_authorization = True
    scripted_model.set_script(["from the environment's endpoint"])
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    monkeypatch.setenv(base_variable, scripted_model.api_base)
    result = await LLMClient().complete(node_for_ai_model("gpt-4o"), HELLO, {})
    assert result["message"]["content"] == "from the environment's endpoint"
    assert scripted_model.chat_requests[0].headers["authorization"] == "Bearer sk-env-key"
