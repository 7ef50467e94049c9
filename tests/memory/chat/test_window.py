"""The pure window selection: semantics, tool-call pairing, and the property that every window
is valid and is the longest valid suffix within both budgets."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.memory.chat.histories import assistant, histories, turn, user
from xflow_runtime.memory.chat import (ChatMemoryError, WindowKind, WindowPolicy, is_valid_window,
                                       select_window)
from xflow_runtime.memory.chat.window import DEFAULT_MAX_MESSAGES, DEFAULT_MAX_TOKENS, window_of


def flat(turns: list[list[dict]]) -> list[dict]:
    return [m for t in turns for m in t]


def pick(history: list[dict], tokens: list[int], policy: WindowPolicy) -> list[dict]:
    selection = window_of([(m["role"], t) for m, t in zip(history, tokens)], policy)
    return history[len(history) - selection.kept:] if selection.kept else []


def oracle(history: list[dict], tokens: list[int], max_messages: int | None,
           max_tokens: int | None) -> list[dict]:
    """Brute force: the longest suffix that is valid and within both limits."""
    best: list[dict] = []
    for start in range(len(history)):
        suffix = history[start:]
        if not suffix or not is_valid_window(suffix):
            continue
        if max_messages is not None and len(suffix) > max_messages:
            continue
        if max_tokens is not None and sum(tokens[start:]) > max_tokens:
            continue
        if len(suffix) > len(best):
            best = suffix
    return best


# -- defaults and policy ---------------------------------------------------------------------

def test_defaults_follow_the_kind() -> None:
    assert WindowPolicy().message_limit == DEFAULT_MAX_MESSAGES == 20
    assert WindowPolicy().token_limit is None
    assert WindowPolicy("token_window").token_limit == DEFAULT_MAX_TOKENS == 4000
    assert WindowPolicy("token_window").message_limit is None
    both = WindowPolicy(WindowKind.TOKEN, max_messages=3, max_tokens=50)
    assert (both.message_limit, both.token_limit) == (3, 50)


@pytest.mark.parametrize("kwargs", [{"kind": "sliding"}, {"max_messages": -1},
                                    {"max_tokens": "10"}, {"max_messages": True}])
def test_bad_policy_is_a_clear_error(kwargs: dict) -> None:
    with pytest.raises(ChatMemoryError):
        WindowPolicy(**kwargs)


# -- message and token windows -----------------------------------------------------------------

def test_message_window_keeps_the_most_recent_whole_turns() -> None:
    history = flat([[user(f"q{i}"), assistant(f"a{i}")] for i in range(10)])
    window = pick(history, [1] * 20, WindowPolicy(max_messages=5))
    assert [m["content"] for m in window] == ["q8", "a8", "q9", "a9"]  # 5 would start on an answer


def test_token_window_keeps_as_many_recent_messages_as_fit() -> None:
    history = flat([[user(f"q{i}"), assistant(f"a{i}")] for i in range(4)])
    tokens = [10, 30, 10, 30, 10, 30, 10, 30]
    window = pick(history, tokens, WindowPolicy("token_window", max_tokens=80))
    assert [m["content"] for m in window] == ["q2", "a2", "q3", "a3"]
    window = pick(history, tokens, WindowPolicy("token_window", max_tokens=79))
    assert [m["content"] for m in window] == ["q3", "a3"]


@pytest.mark.parametrize(("max_messages", "max_tokens", "expected"), [
    (4, 1000, ["q2", "a2", "q3", "a3"]),  # the count triggers first
    (100, 45, ["q3", "a3"]),              # the tokens trigger first
])
def test_both_limits_whichever_triggers_first(max_messages: int, max_tokens: int,
                                              expected: list[str]) -> None:
    history = flat([[user(f"q{i}"), assistant(f"a{i}")] for i in range(4)])
    policy = WindowPolicy("message_window", max_messages=max_messages, max_tokens=max_tokens)
    assert [m["content"] for m in pick(history, [20] * 8, policy)] == expected


def test_parallel_tool_calls_and_results_stay_together() -> None:
    history = turn(0, "x", [1]) + turn(1, "y", [3])  # 4 + 1+1+3+1 = 10 messages
    for limit in range(1, 11):
        window = pick(history, [5] * len(history), WindowPolicy(max_messages=limit))
        assert is_valid_window(window)
        assert len(window) in (0, 6, 10)


def test_window_never_starts_with_an_orphan_tool_result_or_assistant() -> None:
    history = turn(0, "x", [2, 1])
    for budget in range(0, 200, 7):
        window = pick(history, [10] * len(history), WindowPolicy("token_window", max_tokens=budget))
        assert window == [] or window[0]["role"] == "user"


def test_oversized_newest_turn_is_reported_as_overflow_not_a_silent_empty_window() -> None:
    history = [user("short"), assistant("short"), user("huge"), assistant("ok")]
    selection = window_of([(m["role"], t) for m, t in zip(history, [5, 5, 5000, 5])],
                          WindowPolicy("token_window", max_tokens=100))
    assert (selection.kept, selection.overflow, selection.dropped_older) == (0, True, True)


def test_zero_limit_means_no_history_and_is_not_an_overflow() -> None:
    selection = window_of([("user", 1), ("assistant", 1)], WindowPolicy(max_messages=0))
    assert (selection.kept, selection.overflow, selection.dropped_older) == (0, False, True)
    assert window_of([], WindowPolicy(max_messages=0)).dropped_older is False


def test_selection_reads_no_further_than_one_message_past_the_budget() -> None:
    consumed = 0

    def stream():
        nonlocal consumed
        for _ in range(10_000):
            consumed += 1
            yield ("user", 1)

    select_window(stream(), max_messages=20, max_tokens=None)
    assert consumed == 21


# -- property: valid and maximal -----------------------------------------------------------------

@settings(max_examples=400, deadline=None)
@given(data=st.data(), turns=histories,
       max_messages=st.one_of(st.none(), st.integers(0, 40)),
       max_tokens=st.one_of(st.none(), st.integers(0, 400)))
def test_every_window_is_the_longest_valid_suffix_within_budget(
        data: st.DataObject, turns: list[list[dict]], max_messages: int | None,
        max_tokens: int | None) -> None:
    history = flat(turns)
    tokens = data.draw(st.lists(st.integers(1, 60), min_size=len(history), max_size=len(history)))
    selection = select_window(reversed([(m["role"], t) for m, t in zip(history, tokens)]),
                              max_messages=max_messages, max_tokens=max_tokens)
    window = history[len(history) - selection.kept:] if selection.kept else []
    assert is_valid_window(window)
    expected = oracle(history, tokens, max_messages, max_tokens)
    assert window == expected
    assert selection.tokens == (sum(tokens[len(history) - selection.kept:]) if selection.kept else 0)
    within_limits_nonzero = max_messages != 0 and max_tokens != 0
    assert selection.overflow == (bool(history) and not window and within_limits_nonzero)
