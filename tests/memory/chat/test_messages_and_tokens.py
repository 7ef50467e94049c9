"""Turn validation (what may be stored) and token counts (agreement with litellm)."""

from __future__ import annotations

import pytest

from tests.memory.chat.histories import assistant, tool, turn, user
from xflow_runtime.memory.chat import ChatMemoryError, TokenCounter, validate_turn
from xflow_runtime.memory.chat.tokens import APPROXIMATION_SCALE, NON_TEXT_PART_TOKENS


@pytest.mark.parametrize(("messages", "fragment"), [
    ([], "at least one message"),
    ([{"role": "system", "content": "you are"}], "system messages are never stored"),
    ([user("q"), tool("c1", "r")], "does not answer"),
    ([user("q"), assistant(None, "c1")], "have no result"),
    ([user("q"), assistant(None, "c1", "c2"), tool("c1", "r"), assistant("done")], "no result"),
    ([user("q"), assistant(None, "c1", "c1"), tool("c1", "r"), tool("c1", "r")], "duplicate"),
    ([user("q"), {"role": "tool", "content": "r"}], "tool_call_id"),
    ([{"role": "user", "content": 42}], "content must be"),
    ([user("q"), {"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}], "needs an id"),
    (["not a message"], "must be a mapping"),
])
def test_malformed_turns_are_rejected_with_a_clear_error(messages: list, fragment: str) -> None:
    with pytest.raises(ChatMemoryError, match=fragment):
        validate_turn(messages)


def test_turn_is_normalised_to_provider_neutral_openai_format() -> None:
    stored = validate_turn([
        {"role": "user", "content": "hi", "extra": "dropped"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "function": {"name": "f", "arguments": {"a": 1}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "r", "name": "f"},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ])
    assert stored == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]},
        {"role": "tool", "content": "r", "tool_call_id": "c1", "name": "f"},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]


CONVERSATION = turn(0, "weather in Paris? ünïcode 😀 " * 3, [2, 1]) + [
    {"role": "user", "content": "a long pasted document. " * 400 + "." * 3000},
    {"role": "user", "content": [{"type": "text", "text": "and tomorrow?"}], "name": "alice"},
    {"role": "assistant", "content": "Sunny, 21°C."},
]


@pytest.mark.parametrize(("model", "encoding"), [
    ("gpt-4o", "o200k_base"), ("gpt-4", "cl100k_base"), ("gpt-3.5-turbo", "cl100k_base"),
    ("gpt-4o-mini", "o200k_base"),
])
def test_counts_agree_with_litellm_for_openai_models(model: str, encoding: str) -> None:
    from xflow_runtime._env import apply_offline_defaults

    apply_offline_defaults()
    import litellm

    counter = TokenCounter.for_model(model)
    assert counter.encoding == encoding and counter.exact
    messages = validate_turn(CONVERSATION)
    ours = sum(counter.count(m) for m in messages)
    # litellm adds the 3 tokens that prime the reply: they belong to the request, not the window.
    assert ours + 3 == litellm.token_counter(model=model, messages=messages)
    for message in messages:  # and message by message, tool-call arguments included
        assert counter.count(message) + 3 == litellm.token_counter(model=model, messages=[message])


def test_provider_prefix_does_not_change_the_encoding() -> None:
    # Deliberate difference: litellm.token_counter treats "openai/gpt-4o-mini" as an unknown
    # model and counts it with cl100k_base; the provider prefix does not change the tokenizer.
    assert TokenCounter.for_model("openai/gpt-4o-mini") == TokenCounter.for_model("gpt-4o-mini")
    assert TokenCounter.for_model("azure/gpt-4") == TokenCounter.for_model("gpt-4")


def test_models_without_an_encoding_are_over_estimated_with_o200k() -> None:
    exact, approx = TokenCounter.for_model("gpt-4o"), TokenCounter.for_model("anthropic/claude-sonnet-4")
    assert (approx.encoding, approx.scale) == ("o200k_base", APPROXIMATION_SCALE)
    message = user("The quick brown fox jumps over the lazy dog. " * 20)
    assert approx.count(message) > exact.count(message)
    assert TokenCounter.for_model(None).scale == APPROXIMATION_SCALE


def test_non_text_parts_count_a_fixed_estimate() -> None:
    counter = TokenCounter.for_model("gpt-4o")
    text_only = {"role": "user", "content": [{"type": "text", "text": "look"}]}
    with_image = {"role": "user", "content": [{"type": "text", "text": "look"},
                                              {"type": "image_url", "image_url": {"url": "x"}}]}
    assert counter.count(with_image) - counter.count(text_only) == NON_TEXT_PART_TOKENS
