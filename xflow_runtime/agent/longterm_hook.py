"""Long-term memory in an ``aiagent`` state visit (``longTermMemory`` / ``factExtraction``).

The handler asks :func:`long_term_for` once per visit; it returns ``None`` (and imports nothing
from :mod:`xflow_runtime.memory.longterm`) unless the state enables one of the two. Otherwise a
:class:`LongTermHook` bound to the visit's scope — tenant and user from ``services.identity``
(tenant ``"default"`` when absent), ``state.agent_name`` as the agent — that:

- adds the three memory tools to the tools offered (``longTermMemory.enabled``);
- renders the system prompt before **every** LLM call: the static text plus the memory/fact
  block (byte-stable until a write or delete, so the prefix stays cacheable);
- runs memory tool calls as recorded steps (``port.run_step``: a durable replay neither writes
  twice nor searches again);
- queues fact extraction after each stored turn, inside a recorded step.

The :class:`~xflow_runtime.memory.longterm.LongTermMemory` comes from
``services.long_term_memory``: an open one (tests, ``run_workflow``) or a
:class:`LazyLongTermMemory` (the :class:`~xflow_runtime.runtime.Runtime`, opened on first use).
Decisions are in ``specs/agent.md`` ("Long-term memory").
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from xflow_runtime.error_codes import LONG_TERM_MEMORY_UNAVAILABLE as NOT_CONFIGURED
from xflow_runtime.errors import WorkflowError
from xflow_runtime.interpreter.state_run import StateRun

_log = logging.getLogger("xflow_runtime.agent")


class LazyLongTermMemory:
    """The runtime's one long-term memory, opened (and migrated, off the event loop) when the
    first state that enables it runs; on the chat-memory database, so an erasure covers both.

    Opening also resumes, in a background task, the extraction jobs of that database that an
    earlier process left pending or running (a crash between queueing and finishing): failures
    are logged, never raised into an instance; :meth:`aclose` stops the task (an unfinished job
    stays in the queue for the next process)."""

    def __init__(self, url: str, options: Any = None, *, llm: Any = None) -> None:
        self.url = url
        self.options = options  # LongTermOptions; its endpoint, when unset, from ``llm`` (options_from_llm)
        self.llm = llm
        self._memory: Any = None
        self._opening = asyncio.Lock()
        self._resuming: asyncio.Task[None] | None = None

    @property
    def opened(self) -> bool:
        return self._memory is not None

    async def memory(self) -> Any:
        if self._memory is None:
            async with self._opening:
                if self._memory is None:
                    from xflow_runtime.memory.longterm import LongTermMemory

                    options = options_from_llm(self.llm, self.options)
                    memory = await asyncio.to_thread(LongTermMemory.open, self.url, options)
                    self._resuming = asyncio.get_running_loop().create_task(
                        _resume_extractions(memory), name="xflow-resume-fact-extraction")
                    self._memory = memory
        return self._memory

    async def aclose(self) -> None:
        resuming, self._resuming = self._resuming, None
        if resuming is not None and not resuming.done():
            loop = resuming.get_loop()
            if loop is asyncio.get_running_loop():
                resuming.cancel()
                await asyncio.gather(resuming, return_exceptions=True)
            elif not loop.is_closed():  # opened by a durable instance, on DBOS's loop
                loop.call_soon_threadsafe(resuming.cancel)
        memory, self._memory = self._memory, None
        if memory is not None:
            await memory.aclose()


async def _resume_extractions(memory: Any) -> None:
    try:
        resumed = await memory.run_pending_extractions()
    except Exception:  # a broken queue must not break the instance that opened the memory
        _log.exception("resuming pending fact extraction jobs failed")
        return
    if resumed:
        _log.info("resumed %d fact extraction job(s) left by an earlier process", resumed)


def options_from_llm(llm: Any, options: Any = None) -> Any:
    """Long-term memory options for a runtime: ``options`` (a ``LongTermOptions``, default
    keyword search only) with the runtime's LLM endpoint (``api_base``/``api_key`` of its
    :class:`~xflow_runtime.llm.LLMSettings`) filled in when ``options`` names none, so embedding
    and extraction calls go where the agent's calls go."""
    from dataclasses import replace

    from xflow_runtime.llm.client import default_client
    from xflow_runtime.memory.longterm.config import LongTermOptions

    options = options if options is not None else LongTermOptions()
    if options.api_base:
        return options
    settings = getattr(llm if llm is not None else default_client(), "settings", llm)
    api_base, api_key = getattr(settings, "api_base", None), getattr(settings, "api_key", None)
    if not api_base:
        return options
    if not api_key:
        api_key = "scripted"  # as LLMClient does: an OpenAI-compatible endpoint without auth still needs a key
    return replace(options, api_base=api_base, api_key=options.api_key or api_key)


@dataclass(frozen=True)
class LongTermHook:
    step: Any  # xflow_runtime.memory.longterm.StepMemory
    scope: Any  # xflow_runtime.memory.longterm.MemoryScope

    def tools(self) -> list[dict[str, Any]]:
        return self.step.tools_for(self.scope)

    def is_memory_tool(self, name: str) -> bool:
        return self.step.is_memory_tool(name)

    async def system_prompt(self, static_prompt: str) -> str:
        return await self.step.system_prompt(self.scope, static_prompt)

    async def call_tool(self, port: Any, step_name: str, name: str, arguments_text: str) -> Any:
        """The tool's result as a JSON value (``{"error": …}`` for bad arguments), recorded."""
        content = await port.run_step(step_name, lambda: self.step.call_tool(self.scope, name, arguments_text))
        return json.loads(content)

    async def after_turn(self, port: Any, step_name: str, conversation: Sequence[Mapping[str, Any]],
                         source: str | None) -> None:
        messages = [dict(message) for message in conversation]
        await port.run_step(step_name, lambda: self.step.after_turn(self.scope, messages, source=source))


async def long_term_for(state: Any, run: StateRun) -> LongTermHook | None:
    """The visit's hook, or ``None`` when the state enables neither long-term memory nor fact
    extraction. A state that enables one on a runtime without long-term memory fails clearly."""
    if state.long_term is None:
        return None
    from xflow_runtime.memory.longterm import MemoryScope, StepMemory

    services = run.services
    service = services.long_term_memory
    if service is None:
        raise WorkflowError(f"agent '{state.agent_name}' enables long-term memory, but this runtime has no "
                            "database for it (give the Runtime a database_url, or pass "
                            "services.long_term_memory a LongTermMemory)", name=NOT_CONFIGURED, code=NOT_CONFIGURED)
    memory = await service.memory() if isinstance(service, LazyLongTermMemory) else service
    long_term, extraction = state.long_term
    step = StepMemory(memory, long_term, extraction, state.ai_model)
    scope = MemoryScope(tenant=services.identity.tenant, agent=state.agent_name,
                        user=services.identity.user, erasure_epoch=services.identity.erasure_epoch)
    return LongTermHook(step, scope)


def conversation_source(chat_scope: Any) -> str | None:
    """The chat an extraction job comes from (its dedup key's ``source``): the chat key's
    memory id / session, e.g. ``instance:<id>`` for an instance's own history."""
    key = chat_scope.key() if hasattr(chat_scope, "key") else None
    if key is None:
        return None
    return getattr(key, "memory_id", None) or getattr(key, "session", None) or None
