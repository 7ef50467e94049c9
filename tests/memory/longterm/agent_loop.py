"""A minimal agent turn wired the way an integrator wires long-term memory into an LLM loop:
memory block appended to the static system prompt, memory tools offered and executed, the
turn handed to ``after_turn``. Calls go through litellm over HTTP to the scripted model server."""

from __future__ import annotations

from typing import Any

from xflow_runtime.memory.longterm import LongTermMemory, MemoryScope, with_memory_block
from xflow_runtime.memory.longterm.config import FactExtractionSettings
from xflow_runtime.testing import ScriptedModelServer

STATIC_SYSTEM = "You are the support assistant of ACME. Be brief."


async def agent_turn(memory: LongTermMemory, scope: MemoryScope, server: ScriptedModelServer,
                     history: list[dict[str, Any]], user_text: str, *, inject: int = 10, facts: int = 0,
                     extraction: FactExtractionSettings | None = None, max_steps: int = 5) -> str:
    """Run one user turn; append its messages to ``history``; return the assistant's text."""
    from xflow_runtime._env import apply_offline_defaults

    apply_offline_defaults()
    import litellm

    turn: list[dict[str, Any]] = [{"role": "user", "content": user_text}]
    for _ in range(max_steps):
        system = with_memory_block(STATIC_SYSTEM, await memory.render_block(scope, memories=inject, facts=facts))
        response = await litellm.acompletion(
            model="openai/gpt-4o", api_base=server.api_base, api_key="test-key", max_retries=0, _skip_mcp_handler=True,
            messages=[{"role": "system", "content": system}, *history, *turn], tools=memory.tools_for(scope))
        message = response.choices[0].message
        calls = message.tool_calls or []
        turn.append({"role": "assistant", "content": message.content,
                     **({"tool_calls": [{"id": c.id, "type": "function", "function": {
                         "name": c.function.name, "arguments": c.function.arguments}} for c in calls]}
                        if calls else {})})
        if not calls:
            break
        for call in calls:
            result = await memory.call_tool(scope, call.function.name, call.function.arguments)
            turn.append({"role": "tool", "tool_call_id": call.id, "content": result})
    history.extend(turn)
    if extraction is not None:
        await memory.after_turn(scope, history, extraction, model="openai/gpt-4o")
    return turn[-1].get("content") or ""
