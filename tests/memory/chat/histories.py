"""Builders and hypothesis strategies for chat histories with tool calls (test helpers)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str | None, *call_ids: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if call_ids:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": "lookup", "arguments": f'{{"q": "{cid}"}}'}}
            for cid in call_ids]
    return message


def tool(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def turn(index: int, text: str, tool_rounds: list[int]) -> list[dict[str, Any]]:
    """user, then for each round an assistant with N parallel calls and their results (in
    reverse order, as parallel results may come), then a final assistant reply."""
    messages = [user(f"question {index}: {text}")]
    for round_no, calls in enumerate(tool_rounds):
        ids = [f"call_{index}_{round_no}_{c}" for c in range(calls)]
        messages.append(assistant(None, *ids))
        messages.extend(tool(cid, f"result {cid} {text}") for cid in reversed(ids))
    messages.append(assistant(f"answer {index}: {text}"))
    return messages


words = st.text(alphabet="abcdefghij klmnopqrstuvwxyzé😀", min_size=0, max_size=40)
turn_shapes = st.tuples(words, st.lists(st.integers(min_value=1, max_value=3), max_size=3))
histories = st.lists(turn_shapes, min_size=0, max_size=12).map(
    lambda shapes: [turn(i, text, rounds) for i, (text, rounds) in enumerate(shapes)])
