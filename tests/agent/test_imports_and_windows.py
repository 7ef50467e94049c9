"""Import hygiene (litellm only when an AI state calls a model) and the instance history window."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given, strategies as st

from xflow_runtime.agent.conversation import InstanceConversations
from xflow_runtime.memory.chat import ChatScope, WindowPolicy


def test_compiling_and_registering_an_agent_state_does_not_import_litellm():
    code = """
import sys
from xflow_runtime.plan import compile_plan
from xflow_runtime.interpreter.registry import state_handler
plan = compile_plan({"id": "x", "specVersion": "0.8", "start": "a", "states": [
    {"name": "a", "type": "aiagent", "agentName": "x", "userMessage": "{{ q }}", "end": True,
     "llmConfig": {"strategy": {"mode": "fallback"}, "targets": [{"provider": "groq"}, {"provider": "openai"}]}}]})
assert state_handler("aiagent") is not None and state_handler("usertask") is not None
heavy = [m for m in ("litellm", "openai", "tiktoken", "dbos") if m in sys.modules]
print(heavy)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def _turn(index: int, size: int) -> list[dict]:
    return [{"role": "user", "content": f"q{index}"}] + [
        {"role": "assistant", "content": f"a{index}.{part}"} for part in range(size - 1)]


@given(st.lists(st.integers(1, 5), max_size=12), st.one_of(st.none(), st.integers(1, 20)))
async def test_instance_window_keeps_whole_recent_turns_within_max_messages(sizes, limit):
    store = InstanceConversations()
    scope = ChatScope(agent="a", session="s")
    for index, size in enumerate(sizes):
        await store.append(scope, _turn(index, size), model="m", step="s")
    window = await store.load(scope, WindowPolicy("message_window", max_messages=limit) if limit else None,
                              model="m", step="s")
    turns = [_turn(i, size) for i, size in enumerate(sizes)]
    flat = [m for t in turns for m in t]
    assert window == flat[len(flat) - len(window):]  # the most recent messages
    starts = {sum(len(t) for t in turns[:i]) for i in range(len(turns))}
    assert not window or len(flat) - len(window) in starts  # cut at a turn boundary
    if limit is None:
        assert window == flat
    elif turns:
        older = len(flat) - len(window)
        assert len(window) <= limit  # a newest turn past the limit leaves no history (as chat memory)
        if older:
            previous = max(i for i in starts if i < older)
            assert len(window) + older - previous > limit  # the next older turn did not fit
