"""Per-step settings (off by default), the StepMemory binding an integrator uses, and the strict
parser of the extraction model's answer."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xflow_runtime.memory.longterm import (LongTermMemory, LongTermMemoryError, LongTermMemorySettings,
                                           MemoryScope, StepMemory, parse_facts)
from xflow_runtime.memory.longterm.extraction_prompt import ExtractionFormatError, transcript

SCOPE = MemoryScope("acme", "assistant", "user-1")


def test_long_term_memory_settings_default_off_and_validate() -> None:
    assert LongTermMemorySettings.from_definition(None) == LongTermMemorySettings(enabled=False, inject_recent=10)
    assert LongTermMemorySettings.from_definition({"enabled": True, "injectRecent": 3}).inject_recent == 3
    for bad in ({"enabled": 1}, {"injectRecent": -1}, {"injectRecent": True}, {"size": 2}, []):
        with pytest.raises(LongTermMemoryError):
            LongTermMemorySettings.from_definition(bad)  # type: ignore[arg-type]


async def test_a_step_without_settings_gets_no_tools_no_block_no_extraction(sqlite_memory: LongTermMemory) -> None:
    await sqlite_memory.write(SCOPE, "x", "y")
    step = StepMemory.for_state(sqlite_memory, {"agentName": "assistant"}, model="openai/gpt-4o")
    assert not step.active and step.tools_for(SCOPE) == [] and not step.is_memory_tool("memory_write")
    assert await step.render_block(SCOPE) == ""
    assert await step.system_prompt(SCOPE, "Static.") == "Static."
    assert await step.after_turn(SCOPE, [{"role": "user", "content": "hi"}] * 5) is None


async def test_an_enabled_step_gets_tools_block_and_extraction(sqlite_memory: LongTermMemory) -> None:
    for i in range(4):
        await sqlite_memory.write(SCOPE, f"m{i}", f"content {i}")
    await sqlite_memory.add_facts(SCOPE, ["The user speaks Portuguese."])
    state = {"longTermMemory": {"enabled": True, "injectRecent": 2},
             "factExtraction": {"enabled": True, "minUserTurns": 2}}
    step = StepMemory.for_state(sqlite_memory, state, model="openai/gpt-4o")
    assert [t["function"]["name"] for t in step.tools_for(SCOPE)] == ["memory_write", "memory_search",
                                                                      "memory_delete"]
    prompt = await step.system_prompt(SCOPE, "Static.")
    assert prompt.startswith("Static.\n\n<agent_memory>") and "m2" in prompt and "m3" in prompt
    assert "m1" not in prompt and "- The user speaks Portuguese." in prompt
    job = await step.after_turn(SCOPE, [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    assert job is not None
    (queued,) = await sqlite_memory.extraction_jobs(SCOPE)
    assert queued["status"] in ("pending", "running", "done", "failed")


def test_the_tool_definitions_are_valid_json_schema_and_stable(sqlite_memory: LongTermMemory) -> None:
    first = json.dumps(sqlite_memory.tools_for(SCOPE), sort_keys=False)
    assert json.dumps(sqlite_memory.tools_for(SCOPE), sort_keys=False) == first  # cache-stable bytes
    search = sqlite_memory.tools_for(SCOPE)[1]["function"]["parameters"]
    assert search["properties"]["limit"]["maximum"] == 50 and search["required"] == ["query"]


def test_parse_facts_accepts_the_contract_and_normalises() -> None:
    reply = json.dumps([{"content": " The user  lives in Porto. ", "category": "fact", "importance": 7},
                        {"content": "the user lives in porto.", "category": "fact", "importance": 3},
                        {"content": "Loves jazz", "category": "hobby", "importance": 42}])
    facts = parse_facts(f"```json\n{reply}\n```")
    assert [(f.content, f.category, f.importance) for f in facts] == [
        ("The user lives in Porto.", "fact", 7), ("Loves jazz", "general", 10)]
    assert parse_facts(" [] ") == []


@pytest.mark.parametrize("reply", [None, "", "No facts.", "{}", '{"content": "x"}', "[1]", '[{"text": "x"}]'])
def test_parse_facts_rejects_anything_else(reply: str | None) -> None:
    with pytest.raises(ExtractionFormatError):
        parse_facts(reply)


@given(st.text(max_size=200))
def test_parse_facts_never_fails_with_anything_but_a_format_error(reply: str) -> None:
    try:
        facts = parse_facts(reply)
    except ExtractionFormatError:
        return
    assert all(1 <= f.importance <= 10 and f.content for f in facts)


def test_transcript_keeps_user_and_assistant_text_only() -> None:
    messages = [{"role": "system", "content": "secret system"}, {"role": "user", "content": "Hi\nthere"},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
                {"role": "tool", "tool_call_id": "1", "content": "tool output"},
                {"role": "user", "content": [{"type": "text", "text": "multi"}, {"type": "image_url"}]}]
    assert transcript(messages) == "User: Hi there\nUser: multi"


def test_importing_long_term_memory_does_not_import_litellm() -> None:
    import subprocess
    import sys

    code = ("import sys, xflow_runtime as x; x.LongTermMemory; x.MemoryScope; x.LongTermOptions; "
            "import xflow_runtime.memory.longterm.step; print('litellm' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
