"""What an ``aiagent`` step needs from long-term memory, bound to that step's settings.

The integrator (the agent state handler) does, per step visit::

    step = StepMemory.for_state(long_term_memory, raw_state, model=state.ai_model)
    if step.active:
        scope = MemoryScope(tenant, agent=state.agent_name, user=end_user)   # user may be None
        tools = [*state_tools, *step.tools_for(scope)]          # [] unless longTermMemory.enabled
        system = with_memory_block(system_text, await step.render_block(scope))  # before every LLM call
        ...  a tool call whose name step.is_memory_tool(name):
                 content = await step.call_tool(scope, name, arguments)        # → tool message
        await step.after_turn(scope, conversation_so_far, source=chat_id)     # after the turn is stored
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from xflow_runtime.memory.longterm.block import with_memory_block
from xflow_runtime.memory.longterm.config import FactExtractionSettings, LongTermMemorySettings
from xflow_runtime.memory.longterm.memory import LongTermMemory
from xflow_runtime.memory.longterm.scope import MemoryScope
from xflow_runtime.memory.longterm.tools import TOOL_NAMES


@dataclass(frozen=True)
class StepMemory:
    memory: LongTermMemory
    long_term: LongTermMemorySettings = LongTermMemorySettings()
    extraction: FactExtractionSettings = FactExtractionSettings()
    model: str | None = None  # the step's model: the extraction default

    @classmethod
    def for_state(cls, memory: LongTermMemory, state: Mapping[str, Any], *, model: str | None = None) -> "StepMemory":
        """Read ``longTermMemory`` and ``factExtraction`` from a raw ``aiagent`` state."""
        return cls(memory, LongTermMemorySettings.from_definition(state.get("longTermMemory")),
                   FactExtractionSettings.from_definition(state.get("factExtraction")), model)

    @property
    def active(self) -> bool:
        return self.long_term.enabled or self.extraction.enabled

    def tools_for(self, scope: MemoryScope) -> list[dict[str, Any]]:
        return self.memory.tools_for(scope) if self.long_term.enabled else []

    def is_memory_tool(self, name: str) -> bool:
        return self.long_term.enabled and name in TOOL_NAMES

    async def call_tool(self, scope: MemoryScope, name: str, arguments: Mapping[str, Any] | str) -> str:
        return await self.memory.call_tool(scope, name, arguments)

    async def render_block(self, scope: MemoryScope) -> str:
        """Recent memories (``injectRecent``) when the tools are on; recent facts (10) when
        extraction is on and the scope has a user."""
        memories = self.long_term.inject_recent if self.long_term.enabled else 0
        facts = self.extraction.inject_recent if self.extraction.enabled and scope.user else 0
        if not memories and not facts:
            return ""
        return await self.memory.render_block(scope, memories=memories, facts=facts)

    async def system_prompt(self, scope: MemoryScope, static_prompt: str | None) -> str:
        return with_memory_block(static_prompt, await self.render_block(scope))

    async def after_turn(self, scope: MemoryScope, messages: Sequence[Mapping[str, Any]], *,
                         source: str | None = None) -> str | None:
        return await self.memory.after_turn(scope, messages, self.extraction, model=self.model, source=source)
