"""The embedding API: load a workflow once, run it many times, on either engine.

    runtime = Runtime(engine="durable", functions={"charge": charge})
    plan = runtime.load("workflows/order-approval.yaml")
    handle = await runtime.start(plan, {"order": 42})
    await runtime.send_event({"specversion": "1.0", "type": "approval", ...}, instance_id=handle.instance_id)
    output = await handle.result()

Everything is async and never blocks the caller's event loop (DBOS work runs on its own threads
or on the loop with async I/O), so a web service can host a runtime directly. :func:`run_sync`
is the blocking one-shot convenience. The full contract is in ``specs/python-api.md``.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Mapping

from xflow_runtime.errors import WorkflowFailed, XFlowError
from xflow_runtime.history import HistoryBuffer
from xflow_runtime.runtime import execution
from xflow_runtime.runtime.backends import Backend, DurableBackend, InProcessBackend
from xflow_runtime.runtime.handles import InstanceHandle, UnknownInstance, WorkflowRef, digest
from xflow_runtime.interpreter.services import DEFAULT_TENANT, Identity
from xflow_runtime.runtime.memory import chat_memory_url
from xflow_runtime.runtime.options import llm_client, long_term_options

if TYPE_CHECKING:
    from xflow_runtime.a2a.settings import A2ASettings
    from xflow_runtime.engine.durable.instance_keys import InstanceCounts, InstanceQuery
    from xflow_runtime.engine.durable import DurableEngine
    from xflow_runtime.engine.fleet_options import FleetOptions
    from xflow_runtime.expressions.limits import EvaluationLimits
    from xflow_runtime.functions.context import HttpSettings
    from xflow_runtime.interpreter.services import ReplyTokenSink
    from xflow_runtime.llm.client import LLMClient, LLMSettings
    from xflow_runtime.memory.longterm import LongTermOptions
    from xflow_runtime.plan.states import WorkflowPlan
    from xflow_runtime.usertask.inbox import TaskInbox
    from xflow_runtime.agent.proxy_callbacks import CallbackSettings

EngineName = Literal["inprocess", "durable"]
EventListener = Callable[[dict[str, Any]], None]
#: Receives (instance id, history record) for every record of every instance.
InstanceHistoryListener = Callable[[str, dict[str, Any]], None]


class Runtime:
    """Runs workflow instances on the in-process engine (fast, nothing persisted) or the durable
    engine (DBOS; SQLite under ``./.xflow/`` by default, PostgreSQL by ``database_url``).

    Every argument is described in ``specs/python-api.md`` ("Runtime").

    A durable runtime owns DBOS, a process-wide singleton: one durable runtime per process.
    ``executor_id`` decides which crashed instances it recovers when it opens: the default
    ``"local"`` recovers the PENDING instances of earlier processes that used ``"local"`` too (a
    fleet worker gets a fresh id of its own and a reaper hands a dead worker's instances on).
    """

    def __init__(self, engine: EngineName = "inprocess", *, database_url: str | None = None,
                 functions: Mapping[str, Callable[..., Any]] | None = None,
                 secrets: Mapping[str, Any] | None = None,
                 on_event: EventListener | None = None,
                 on_history: EventListener | None = None,
                 executor_id: str = "local",
                 workflows: Iterable["WorkflowPlan | str | Path"] = (),
                 http: "HttpSettings | None" = None,
                 llm: "LLMSettings | LLMClient | None" = None,
                 chat_memory: str | bool | None = None,
                 long_term: "LongTermOptions | None" = None,
                 on_instance_history: InstanceHistoryListener | None = None,
                 reply_tokens: "ReplyTokenSink | None" = None,
                 strict: bool = False,
                 evaluation_limits: "EvaluationLimits | None" = None,
                 fleet: "FleetOptions | None" = None,
                 callbacks: "CallbackSettings | None" = None,
                 tracer_provider: Any = None,
                 meter_provider: Any = None,
                 capture_content: bool | None = None,
                 a2a: "A2ASettings | None" = None) -> None:
        if engine not in ("inprocess", "durable"):
            raise ValueError(f"engine must be 'inprocess' or 'durable', not {engine!r}")
        self.engine_name: EngineName = engine
        #: Load workflows by the letter of SW 0.8: SonataFlow relaxations are definition errors.
        self.strict = strict
        self.database_url = database_url
        self.functions = dict(functions or {})
        self.secrets = dict(secrets or {})
        self.on_event = on_event
        self.on_history = on_history
        self.on_instance_history = on_instance_history
        self.reply_tokens = reply_tokens
        #: Part of a worker fleet (specs/deployment.md): starts go through the instance queue, and
        #: each process has a fresh executor id (a fleet never shares one).
        self.fleet = fleet
        if fleet is not None and executor_id == "local":
            from xflow_runtime.engine.fleet_options import new_executor_id

            executor_id = new_executor_id()
        self.executor_id = executor_id
        self.http = http
        #: The budget of every expression and template evaluation (specs/limits.md).
        self.evaluation_limits = evaluation_limits
        #: Where asynchronous ``aiagentproxy`` agents call back, and the secrets of their tokens.
        self.callbacks = callbacks
        #: OpenTelemetry (specs/observability.md): providers of our spans and GenAI metrics (default:
        #: the global ones, if an SDK is set up); ``capture_content`` records prompts, completions
        #: and tool payloads (default: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``, off).
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.capture_content = capture_content
        #: Where A2A agents send push callbacks and the secret their tokens derive from (specs/a2a.md).
        self.a2a = a2a
        self.llm = llm_client(llm)
        self.long_term_options = long_term_options(long_term)
        self.chat_memory_url: str | None = None
        if isinstance(chat_memory, str):
            self.chat_memory_url = chat_memory
        elif chat_memory is None and (engine == "durable" or database_url is not None):
            self.chat_memory_url = chat_memory_url(database_url)
        self._subflows: dict[str, "WorkflowPlan"] = {}  # sha256 → plan, in registration order
        self._plans: dict[str, "WorkflowPlan"] = {}  # sha256 → plan
        self._refs: dict[int, WorkflowRef] = {}      # id(plan) → where it came from
        self._durable: "DurableEngine | None" = None
        self._services = execution.Services(self)
        #: Where instances run (runtime/backends.py): in-process now, the durable engine once open.
        self._backend: Backend = InProcessBackend(self._services)
        self._opening = asyncio.Lock()
        for workflow in workflows:
            self.register(workflow)

    # --- lifecycle -------------------------------------------------------------------------------
    async def open(self) -> "Runtime":
        """Open the engine (for a durable runtime: launch DBOS, which recovers pending instances).
        Called by ``async with`` and, lazily, by the first call that needs it."""
        if self.engine_name == "durable" and self._durable is None:
            async with self._opening:  # concurrent first calls launch DBOS once
                if self._durable is None:
                    from xflow_runtime.engine.durable import DurableEngine

                    engine = DurableEngine(self.database_url, executor_id=self.executor_id, fleet=self.fleet)
                    self._services.register_wake_writers()  # before launch: recovery may need them
                    # DBOS.launch does blocking database work (migrations, recovery): off our loop.
                    await _in_own_thread(engine.launch, self._run_durable_body)
                    limiter = engine.llm_limiter()  # a fleet's rate limit on LLM calls
                    if limiter is not None:
                        from xflow_runtime.llm.client import LLMClient

                        self.llm = self.llm or LLMClient()
                        self.llm.limiter = limiter
                    self._durable = engine
                    self._backend = DurableBackend(engine)
        return self

    async def apply_schedules(self, plans: Iterable["WorkflowPlan"], *, prune: bool = True) -> list[str]:
        """A fleet worker: the ``start.schedule`` of ``plans`` become the fleet's schedules (``prune``:
        others stop); a warning per schedule that cannot run (specs/deployment.md, "Schedules")."""
        await self._require_durable("schedule instances")
        from xflow_runtime.engine.schedules import apply_for

        names: list[str] = await _in_own_thread(apply_for, self, list(plans), prune)
        return names

    async def drain(self, timeout: float) -> bool:
        """A fleet worker's graceful stop, first half: start no new step and wait up to ``timeout``
        s for the steps in flight (then :meth:`close` hands the instances back). True if none was left."""
        if self._durable is None:
            return True
        drained: bool = await _in_own_thread(self._durable.drain, timeout)
        return drained

    async def close(self) -> None:
        await self._backend.close()
        await self._services.aclose()
        if self._durable is not None:
            engine, self._durable = self._durable, None
            self._backend = InProcessBackend(self._services)
            from xflow_runtime.engine.durable import stop_running_instances

            await stop_running_instances()
            await _in_own_thread(engine.shutdown)
            # DBOS made its (now shut down) thread pool this loop's default executor; give the
            # loop a working one back so the embedder's asyncio.to_thread keeps working.
            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor())

    async def __aenter__(self) -> "Runtime":
        return await self.open()

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    # --- workflows -------------------------------------------------------------------------------
    def load(self, path: str | Path) -> "WorkflowPlan":
        """Load, validate and compile a workflow file (raises
        :class:`~xflow_runtime.errors.DefinitionError` with every diagnostic). Loading the same
        unchanged file again returns the same plan."""
        source_path = Path(path).resolve()
        try:
            text = source_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or str(error)
            raise XFlowError(f"cannot read workflow file {path}: {reason}") from None
        return self._compile(WorkflowRef(str(source_path), digest(text), text), shown_as=str(path))

    def register(self, workflow: "WorkflowPlan | str | Path") -> "WorkflowPlan":
        """Make a workflow (a plan from :meth:`load`, or a file) available to ``subFlowRef`` by its
        id and version. Durable instances record the text of every registered workflow, so a
        resumed instance finds the subflows it started with. A new text of a registered id and
        version replaces the old one."""
        plan = self.load(workflow) if isinstance(workflow, (str, Path)) else workflow
        ref = self._refs.get(id(plan))
        if ref is None:
            raise XFlowError("register() takes a file or a plan returned by this runtime's load()")
        for sha, known in list(self._subflows.items()):  # a new text of the same id and version replaces it
            if (known.workflow_id, known.version) == (plan.workflow_id, plan.version) and known is not plan:
                del self._subflows[sha]
        self._subflows[ref.sha256] = plan
        return plan

    def source_of(self, plan: "WorkflowPlan") -> WorkflowRef:
        """Where a plan of this runtime came from (file, SHA-256 and text)."""
        ref = self._refs.get(id(plan))
        if ref is None:
            raise XFlowError("not a plan returned by this runtime's load()")
        return ref

    def _compile(self, ref: WorkflowRef, shown_as: str | None = None) -> "WorkflowPlan":
        plan = self._plans.get(ref.sha256)
        if plan is None:
            plan = execution.load_plan(ref.source, Path(ref.path), shown_as or ref.path, strict=self.strict)
            self._plans[ref.sha256] = plan
        self._refs[id(plan)] = ref
        return plan

    def _plan_for(self, recorded: Mapping[str, str]) -> "WorkflowPlan":
        """The plan a recorded instance started with (compiled again after a restart, from the
        recorded text: the file may have changed or gone)."""
        return self._compile(WorkflowRef(recorded["path"], recorded["sha256"], recorded["source"]))

    # --- instances -------------------------------------------------------------------------------
    async def start(self, plan: "WorkflowPlan", input: Any = None, *,
                    instance_id: str | None = None, tenant: str | None = None,
                    user: str | None = None, labels: Mapping[str, str] | None = None) -> InstanceHandle:
        """Start an instance of ``plan`` with ``input`` (a JSON-like value; ``None`` means ``{}``).
        ``tenant`` (default ``"default"``) and ``user`` (the authenticated caller, if any) scope
        the instance's chat memory. On the durable engine, starting again with an existing
        ``instance_id`` attaches to that instance instead of starting a second one. ``labels``
        (strings) are recorded with a durable instance and listed with it."""
        await self.open()
        instance_id = instance_id or str(uuid.uuid4())
        data = {} if input is None else input
        identity = await self._services.identity(tenant or DEFAULT_TENANT, user)
        subflows = list(self._subflows.values())
        await self._backend.start(plan, data, instance_id, identity, ref=self._refs.get(id(plan)), subflows=subflows,
                                  subflow_refs=[self._refs[id(p)] for p in subflows if p is not plan and id(p) in self._refs],
                                  labels=labels or {})
        await self._services.keep_unless_erased(identity, instance_id, self._backend.forget)
        return InstanceHandle(self, instance_id)

    @property
    def tasks(self) -> "TaskInbox":
        """The user-task inbox of ``usertask`` states: list, claim, unclaim, complete, delete
        (specs/states-human.md). Needs a database (a durable runtime, or ``database_url``)."""
        from xflow_runtime.usertask.inbox import TaskInbox

        return TaskInbox(self, self._services.tasks)

    async def agent_callback(self, request_id: str, token: str | None, body: Any) -> dict[str, Any]:
        """An ``aiagentproxy`` agent's callback, as ``POST /v1/callbacks/agent-proxy/{id}`` takes it
        (``{requestId, status, duplicate}``, else ``CallbackError``; specs/states-human.md §7)."""
        await self.open()
        return await self._services.agent_callback(request_id, token, body)

    def instance(self, instance_id: str) -> InstanceHandle:
        """A handle on an existing instance (e.g. one started by an earlier process)."""
        return InstanceHandle(self, instance_id)

    async def resume(self, instance_id: str) -> InstanceHandle:
        """Resume a durable instance that stopped (its process died, or it was cancelled). It
        continues after its last completed step."""
        engine = await self._require_durable("resume")
        if await engine.status(instance_id) is None:
            raise UnknownInstance(f"no instance {instance_id!r} in {engine.display_url}")
        await engine.resume(instance_id)
        return InstanceHandle(self, instance_id)

    async def cancel(self, instance_id: str) -> None:
        """Stop an instance: a durable one is marked cancelled (``resume`` continues it after its
        last completed step); an in-process one is cancelled outright."""
        await self.open()
        await self._backend.cancel(instance_id)

    async def send_event(self, event: Mapping[str, Any], *, instance_id: str | None = None) -> None:
        """Deliver a CloudEvent (a dict with ``type``, ``source``, ``data``…) to one instance, or
        without ``instance_id`` to every instance this runtime is running. Events sent before an
        instance waits for them are kept until it does."""
        await self.open()
        cloud_event = execution.normalize_cloud_event(event)
        targets = await self._backend.running() if instance_id is None else [instance_id]
        for target in targets:
            await self._deliver(target, cloud_event)

    async def send_message(self, instance_id: str, message: Any) -> None:
        """Send the next user message (a string or ``{"text": …}``) to an agent conversation
        waiting in ``instance_id`` (an ``aiagent`` outcome with ``finish: false``). The agent's
        answers arrive as ``agent_reply`` history records (``on_history``). See specs/agent.md."""
        from xflow_runtime.agent import USER_MESSAGE_TOPIC

        await self._send_topic(instance_id, USER_MESSAGE_TOPIC, message)

    async def deliver_callback(self, instance_id: str, topic: str, payload: Any, *, idempotency_key: str) -> None:
        """Hand an already verified callback (e.g. an A2A push notification, specs/a2a.md) to the
        wait of ``instance_id`` on ``topic``; the same ``idempotency_key`` twice is delivered once."""
        await self._send_topic(instance_id, topic, payload, idempotency_key)

    async def _send_topic(self, instance_id: str, topic: str, payload: Any, idempotency_key: str | None = None) -> None:
        await self.open()
        await self._backend.send(instance_id, topic, payload, idempotency_key)

    async def _deliver(self, instance_id: str, cloud_event: dict[str, Any]) -> None:
        await self._send_topic(instance_id, execution.event_topic(cloud_event), cloud_event, cloud_event.get("id"))

    async def _result(self, instance_id: str) -> Any:
        return await self._backend.result(instance_id)

    # --- inspection (durable) --------------------------------------------------------------------
    async def list_instances(self, *, limit: int | None = 50,
                             status: str | list[str] | None = None) -> list[dict[str, Any]]:
        """The most recent durable instances, newest first (id, status, workflow, tenant, user,
        times); ``status`` DBOS statuses (``PENDING``, ``ENQUEUED``, ``SUCCESS``, ``ERROR``, ``CANCELLED``)."""
        engine = await self._require_durable("list instances")
        return [execution.describe_status(s) for s in await engine.list(limit=limit, status=status)]

    async def find_instances(self, query: "InstanceQuery") -> list[dict[str, Any]]:
        """One page of durable instances (rows as :meth:`list_instances`), by the database's indexes."""
        engine = await self._require_durable("list instances")
        return [execution.describe_status(s) for s in await engine.page(query)]

    async def count_instances(self, ids: Iterable[str] = ()) -> "InstanceCounts":
        """Every tenant's instances counted by engine status (in the database, if durable), and the status of ``ids``."""
        await self.open()
        return await self._backend.counts(list(ids))

    async def event_recipients(self, event: Mapping[str, Any], *, tenant: str, user: str | None = None) -> list[str]:
        """The live durable instances of ``tenant`` (``user``) ``event`` reaches by correlation (by index)."""
        from xflow_runtime.engine.durable.instance_keys import correlates, event_keys
        engine = await self._require_durable("deliver events by correlation")
        return [s.workflow_id for s in await engine.recipients(tenant, user, event_keys(event))
                if correlates(execution.describe_status(s)["labels"], event)]

    async def status_row(self, instance_id: str) -> dict[str, Any] | None:
        """One durable instance as :meth:`list_instances` lists it, or ``None`` if unknown."""
        engine = await self._require_durable("look an instance up")
        status = await engine.status(instance_id)
        return None if status is None else execution.describe_status(status)

    async def history(self, instance_id: str) -> list[dict[str, Any]]:
        """The history records of an instance written so far, in ``seq`` order."""
        await self.open()
        return await self._backend.history(instance_id)

    async def describe(self, instance_id: str) -> dict[str, Any]:
        """One instance: status, input, output, error, and its history of states (input, output,
        error, duration and LLM usage of each)."""
        await self.open()
        return await self._backend.describe(instance_id)

    async def _require_durable(self, what: str) -> "DurableEngine":
        if self.engine_name != "durable":
            raise XFlowError(f"cannot {what}: the in-process engine keeps no records")
        await self.open()
        assert self._durable is not None
        return self._durable

    # --- the body of a durable instance (runs inside the DBOS workflow) --------------------------
    async def _run_durable_body(self, request: dict[str, Any], port: Any) -> Any:
        plan = self._plan_for(request["workflow"])
        subflows = [self._plan_for(recorded) for recorded in request.get("subflows", ())]
        identity = Identity.of(request.get("identity"))
        port.history = HistoryBuffer(listeners=self.history_listeners(port.instance_id))
        try:
            return await execution.execute(self._services, plan, request["input"], port,
                                           instance_id=port.instance_id, history=port.history,
                                           identity=identity, workflows=subflows)
        except WorkflowFailed as failure:
            from xflow_runtime.engine.serializer import RecordedFailure  # DBOS is loaded here anyway

            raise RecordedFailure(failure.instance_id, failure.error) from None
        finally:
            await port.flush()

    def history_listeners(self, instance_id: str) -> list[EventListener]:
        listeners = [self.on_history] if self.on_history else []
        if self.on_instance_history is not None:
            listeners.append(functools.partial(self.on_instance_history, instance_id))
        return listeners


async def _in_own_thread(function: Callable[..., Any], *args: Any) -> Any:
    """Run blocking DBOS lifecycle work on a thread of its own: not on the loop, and not on the
    loop's default executor, which DBOS replaces with its own pool and shuts down on destroy."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="xflow-lifecycle") as executor:
        return await asyncio.get_running_loop().run_in_executor(executor, function, *args)
