"""The joints between :mod:`xflow_runtime.runtime` and the rest of the package: loading plans,
calling the interpreter, in-process instances, event routing and instance descriptions.

Kept apart from ``runtime.py`` so the public class reads as a contract; this module is internal.
"""

from __future__ import annotations

import asyncio
import functools
import os
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, Sequence

from xflow_runtime.engine.durable.names import PARKED_STATUS, parked_error
from xflow_runtime.errors import XFlowError
from xflow_runtime.history import HistoryBuffer, summarize
from xflow_runtime.interpreter.services import Identity, InstanceServices
from xflow_runtime.runtime.memory import LazyChatMemory

if TYPE_CHECKING:
    from xflow_runtime.agent.longterm_hook import LazyLongTermMemory
    from xflow_runtime.agent.proxy_callbacks import AgentCallbacks
    from xflow_runtime.plan.states import WorkflowPlan
    from xflow_runtime.usertask.store import TaskStore
    from xflow_runtime.runtime import Runtime


def load_plan(source: str, path: Path, shown_as: str, *, strict: bool = False) -> "WorkflowPlan":
    """Compile workflow text read from ``path`` (references resolve next to it; diagnostics name
    it ``shown_as``). Raises :class:`~xflow_runtime.errors.DefinitionError` with every diagnostic;
    ``strict`` makes the SonataFlow relaxations (XF140–XF147) errors. When the command turned on
    :mod:`~xflow_runtime.runtime.definition_cache`, a document checked before is not checked again."""
    from xflow_runtime.runtime import definition_cache

    cached = definition_cache.cached_plan(source, path.parent, shown_as, strict)
    if cached is not None:
        return cached
    from xflow_runtime.definition import load_workflow

    loaded = load_workflow(source, source_name=shown_as, base_dir=path.parent, strict=strict)
    plan: WorkflowPlan = loaded.plan
    if plan is not None:
        definition_cache.store(source, path.parent, shown_as, strict, loaded.document, loaded.referenced_files)
    return plan


_UNRESOLVED = object()


class Services:
    """What instances of one runtime share: function contexts (HTTP client, secrets), the LLM
    client, the chat memory (opened on first use) and the registered subflows."""

    def __init__(self, runtime: "Runtime") -> None:
        self.runtime = runtime
        self._function_contexts: dict[int, Any] = {}
        self._telemetry: Any = _UNRESOLVED
        self.chat_memory: LazyChatMemory | None = None
        url = runtime.chat_memory_url
        if url is not None:
            self.chat_memory = LazyChatMemory(url)
        # long-term memory and user tasks live in the same database as chat memory (one erasure
        # covers them all), each opened on first use
        self.long_term_memory: "LazyLongTermMemory | None" = None
        self.tasks: "TaskStore | None" = None
        self.agent_callbacks: "AgentCallbacks | None" = None
        if url is not None:
            from xflow_runtime.agent import longterm_hook
            from xflow_runtime.usertask import store

            self.long_term_memory = longterm_hook.LazyLongTermMemory(url, runtime.long_term_options, llm=runtime.llm)
            self.tasks = store.TaskStore(url)
            from xflow_runtime.agent.proxy_callbacks import AgentCallbacks
            from xflow_runtime.agent.proxy_requests import ProxyRequestStore

            self.agent_callbacks = AgentCallbacks(runtime.callbacks, ProxyRequestStore(url))

    def register_wake_writers(self) -> None:
        """The writes the durable engine runs together with the wake-ups they ask for
        (``engine/durable/wakes.py``): task completions, agent-proxy answers."""
        from xflow_runtime.engine.durable.wakes import register_writer

        if self.tasks is not None:
            from xflow_runtime.usertask.inbox import WAKE_KIND, act_and_ask_to_wake

            register_writer(WAKE_KIND, functools.partial(act_and_ask_to_wake, self.tasks))
        if self.agent_callbacks is not None:
            from xflow_runtime.agent.proxy_callbacks import WAKE_KIND as PROXY_KIND, answer_and_ask_to_wake

            register_writer(PROXY_KIND, functools.partial(answer_and_ask_to_wake, self.agent_callbacks.store))

    @property
    def telemetry(self) -> Any:
        """The runtime's OpenTelemetry spans and metrics, or ``None`` when tracing is off; decided
        at the first instance (an embedder may set a global tracer provider after building the
        runtime). Without OpenTelemetry in use this imports nothing (``xflow_runtime.telemetry``)."""
        if self._telemetry is _UNRESOLVED:
            runtime = self.runtime
            self._telemetry = None
            # No provider given, no OpenTelemetry imported, no OTEL_* variable: off, without even
            # importing our telemetry package (cold start). Otherwise its rules decide.
            if (runtime.tracer_provider is not None or runtime.meter_provider is not None
                    or "opentelemetry.trace" in sys.modules or any(name.startswith("OTEL_") for name in os.environ)):
                from xflow_runtime.telemetry import resolve

                self._telemetry = resolve(runtime.tracer_provider, runtime.meter_provider,
                                          capture_content=runtime.capture_content)
        return self._telemetry

    async def agent_callback(self, request_id: str, token: str | None, body: Any) -> dict[str, Any]:
        from xflow_runtime.agent.proxy_callbacks import CallbackError

        if self.agent_callbacks is None:
            raise CallbackError("not-found", "agent callbacks need a database (a durable runtime, or database_url)")
        return await self.agent_callbacks.deliver(self.runtime, request_id, token, body)

    async def identity(self, tenant: str, user: str | None) -> Identity:
        """An instance's identity. With a user and a memory store it also records the user's
        erasure epoch at the start, so the instance's memory writes after an erasure of the user
        are refused (specs/memory-longterm.md, privacy)."""
        epoch = None
        if user and self.chat_memory is not None:
            epoch = await self.chat_memory.erasure_epoch(tenant, user)
        return Identity(tenant=tenant, user=user, erasure_epoch=epoch)

    async def keep_unless_erased(self, identity: Identity, instance_id: str,
                                 forget: Callable[[str], Awaitable[None]]) -> None:
        """Called once an instance is stored. Its identity read the user's epoch before: an erasure
        in between may have looked for the user's instances before this one existed. Then the
        instance is ``forget``-ed (stopped, every row deleted) and :class:`SubjectErased` raised."""
        if identity.erasure_epoch is None or not identity.user or self.chat_memory is None:
            return
        if await self.chat_memory.erasure_epoch(identity.tenant, identity.user) == identity.erasure_epoch:
            return
        from xflow_runtime.privacy.subject import SubjectErased

        await forget(instance_id)
        raise SubjectErased(f"user {identity.user!r} of tenant {identity.tenant!r} was erased while instance "
                            f"{instance_id!r} started: nothing of it is kept")

    def function_context(self, plan: "WorkflowPlan") -> Any:
        context = self._function_contexts.get(id(plan))
        if context is None:
            from xflow_runtime.functions.context import FunctionContext
            from xflow_runtime.functions.registry import FunctionRegistry

            registry = FunctionRegistry()
            for key, function in self.runtime.functions.items():
                registry.register(key, function)
            context = FunctionContext(secrets=self.runtime.secrets, constants=plan.constants,
                                      registry=registry, http=self.runtime.http)
            self._function_contexts[id(plan)] = context
        return context

    def for_instance(self, identity: Identity) -> InstanceServices:
        """``ExecutionContext.services`` of one instance (read by the ``aiagent`` handler)."""
        return InstanceServices(identity=identity, llm=self.runtime.llm, chat_memory=self.chat_memory,
                                long_term_memory=self.long_term_memory, reply_tokens=self.runtime.reply_tokens,
                                tasks=self.tasks, agent_callbacks=self.agent_callbacks, a2a=self.runtime.a2a)

    async def aclose(self) -> None:
        contexts, self._function_contexts = list(self._function_contexts.values()), {}
        for context in contexts:
            await context.aclose()
        if self.chat_memory is not None and self.chat_memory.opened:
            await asyncio.to_thread(self.chat_memory.close)
        if self.tasks is not None:
            await asyncio.to_thread(self.tasks.close)
        if self.agent_callbacks is not None:
            await asyncio.to_thread(self.agent_callbacks.store.close)
        if self.long_term_memory is not None:
            await self.long_term_memory.aclose()  # waits for running extractions; no-op if never opened


async def execute(services: Services, plan: "WorkflowPlan", input: Any, port: Any, *,
                  instance_id: str, history: HistoryBuffer, identity: Identity,
                  workflows: Sequence["WorkflowPlan"] = ()) -> Any:
    """Run the interpreter over ``port``; the output, or :class:`WorkflowFailed`. ``identity``
    (``tenant``, ``user``) scopes chat memory; ``workflows`` are what ``subFlowRef`` can name."""
    from xflow_runtime.interpreter.context import ExecutionContext, WorkflowRegistry
    from xflow_runtime.interpreter.execute import execute as interpret

    function_context = services.function_context(plan)

    async def invoke(function: Any, arguments: Any, *, selection_set: str | None) -> Any:
        from xflow_runtime.functions import invoke_function

        return await invoke_function(function, arguments, selection_set=selection_set,
                                     context=function_context)

    # Runtime(functions=…) live in the FunctionRegistry behind the invoker, not in
    # ExecutionContext.functions: that way they follow the calling convention of ``python:``
    # operations (keyword arguments) and sync ones run in a worker thread, off the event loop.
    context = ExecutionContext(
        invoker=invoke,
        secrets=services.runtime.secrets,
        event_sink=services.runtime.on_event,
        observer=history,
        instance_id=instance_id,
        workflows=WorkflowRegistry(workflows),
        services=services.for_instance(identity),
        evaluation_limits=services.runtime.evaluation_limits,
        telemetry=services.telemetry,
    )
    try:
        if context.telemetry is None:
            result = await interpret(plan, input, port=port, context=context)
            return result.raise_for_error()
        from xflow_runtime.telemetry.instance import traced_execution

        async with traced_execution(context.telemetry, plan, instance_id, port) as span:
            result = await interpret(plan, input, port=port, context=context)
            if not result.ok:
                span.fail(str((result.error or {}).get("code") or "WorkflowFailed"))
    finally:
        if context.services.mcp.value is not None:  # no MCP connection outlives its instance
            from xflow_runtime.mcp.connections import close_instance_connections

            await close_instance_connections(context.services)
    return result.raise_for_error()


def normalize_cloud_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """A CloudEvent as a plain dict with ``specversion`` and ``id`` filled in when missing."""
    if not isinstance(event, Mapping) or not isinstance(event.get("type"), str):
        raise XFlowError("an event must be a CloudEvent object with a string 'type'")
    cloud_event = dict(event)
    cloud_event.setdefault("specversion", "1.0")
    cloud_event.setdefault("id", str(uuid.uuid4()))
    return cloud_event


def event_topic(cloud_event: Mapping[str, Any]) -> str:
    """Every CloudEvent for an instance goes to one topic, in order; the interpreter matches
    type/source/correlation itself and keeps the events no state waits for yet."""
    from xflow_runtime.interpreter.events import EVENT_TOPIC

    return EVENT_TOPIC


class LocalInstance:
    """One instance on the in-process engine: an asyncio task plus its engine."""

    def __init__(self, engine: Any, task: "asyncio.Task[Any]", history: HistoryBuffer,
                 instance_id: str) -> None:
        self.engine = engine
        self.task = task
        self.history = history
        self.instance_id = instance_id

    @classmethod
    def start(cls, services: Services, plan: "WorkflowPlan", input: Any, instance_id: str, *,
              identity: Identity, workflows: Sequence["WorkflowPlan"]) -> "LocalInstance":
        from xflow_runtime.engine.inprocess import InProcessEngine

        engine = InProcessEngine()
        history = HistoryBuffer(listeners=services.runtime.history_listeners(instance_id), keep=True)
        task = asyncio.ensure_future(execute(services, plan, input, engine, instance_id=instance_id,
                                             history=history, identity=identity, workflows=workflows))
        return cls(engine, task, history, instance_id)

    @property
    def done(self) -> bool:
        return self.task.done()

    def deliver(self, topic: str, payload: Any) -> None:
        self.engine.send(topic, payload)

    async def result(self) -> Any:
        return await asyncio.shield(self.task)

    def cancel(self) -> None:
        self.task.cancel()

    @property
    def status(self) -> str:
        """Its status in the durable engine's vocabulary (a cancelled one failed: no record says otherwise)."""
        if not self.task.done():
            return "PENDING"
        return "ERROR" if self.task.cancelled() or self.task.exception() else "SUCCESS"

    def describe(self) -> dict[str, Any]:
        return _description(self.instance_id, self.status, None, self.history.records)


def describe_status(status: Any) -> dict[str, Any]:
    """A DBOS workflow status as the row ``xflow list`` prints."""
    request = _request_of(status)
    workflow = request.get("workflow", {})
    return {
        "instance_id": status.workflow_id,
        "status": status.status,
        "workflow": workflow.get("id") or Path(workflow.get("path", "?")).name,
        "file": workflow.get("path"),
        "tenant": (request.get("identity") or {}).get("tenant"),
        "user": (request.get("identity") or {}).get("user"),
        "labels": request.get("labels") or {},
        "created_at": _seconds(status.created_at),
        "updated_at": _seconds(status.updated_at),
        "completed_at": _seconds(getattr(status, "completed_at", None)),
    }


def describe_durable(status: Any, records: list[dict[str, Any]]) -> dict[str, Any]:
    described = _description(status.workflow_id, status.status, describe_status(status), records)
    request = _request_of(status)
    described.setdefault("input", request.get("input"))
    if status.status == "SUCCESS":
        described["output"] = status.output
    error = status.error
    if status.status == PARKED_STATUS:
        described["error"] = parked_error()
    elif error is not None and described.get("error") is None:
        described["error"] = getattr(error, "error", None) or {"message": str(error),
                                                               "code": type(error).__name__}
    return described


def _description(instance_id: str, status: str, row: dict[str, Any] | None,
                 records: list[dict[str, Any]]) -> dict[str, Any]:
    summary = summarize(records)
    described: dict[str, Any] = dict(row or {"instance_id": instance_id, "status": status})
    described.update({
        "input": summary.input,
        "output": summary.output,
        "error": summary.error,
        "states": [visit.to_dict() for visit in summary.visits],
        "produced_events": summary.produced_events,
        "usage": summary.usage,
    })
    return described


def _request_of(status: Any) -> dict[str, Any]:
    inputs = getattr(status, "input", None)
    args = getattr(inputs, "args", None) if inputs is not None else None
    if isinstance(inputs, dict):
        args = inputs.get("args")
    if args and isinstance(args[0], dict):
        return args[0]
    return {}


def _seconds(epoch_ms: int | None) -> float | None:
    return None if epoch_ms is None else epoch_ms / 1000.0
