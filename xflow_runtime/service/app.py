"""``create_app(runtime, workflows=DIR, auth=…)``: the runtime as an HTTP service (FastAPI).

Run it alone (``xflow serve``) or mount it into another ASGI app. A mounted app's lifespan is not
run by Starlette, so the app also opens itself on its first request; a host that wants the
runtime opened (and recovered instances resumed) at its own startup uses
``async with service_lifespan(app): …``. Routers are separate modules so other areas (memory,
SonataFlow routes) add theirs with ``app.include_router`` on the same :class:`ServiceState`."""

from __future__ import annotations

from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator

from fastapi import FastAPI

from xflow_runtime.interpreter.services import ReplyTokenSink, SelectiveReplyTokenSink
from xflow_runtime.service import (routes_a2a_callbacks, routes_callbacks, routes_chat, routes_events, routes_graph,
                                   routes_instances, routes_memory, routes_ops, routes_privacy, routes_tasks)
from xflow_runtime.service.catalog import WorkflowCatalog
from xflow_runtime.service.live import LiveHub
from xflow_runtime.service.metrics import ServiceMetrics
from xflow_runtime.service.middleware import ServiceMiddleware
from xflow_runtime.service.problems import install_problem_handlers
from xflow_runtime.service.state import ServiceOptions, ServiceState

if TYPE_CHECKING:
    from xflow_runtime.runtime import Runtime
    from xflow_runtime.service.auth import Authenticator

API_VERSION = "1.0.0"


def create_app(runtime: "Runtime", *, workflows: str | Path, auth: "Authenticator",
               options: ServiceOptions | None = None, sonataflow_routes: bool = False,
               mcp: bool = False, mcp_host: str = "127.0.0.1", mcp_wait_seconds: float = 30.0,
               a2a_agents: bool = False, console: bool = True) -> FastAPI:
    if runtime.engine_name != "durable":
        from xflow_runtime.errors import XFlowError

        raise XFlowError("the service runs a durable runtime (Runtime('durable', …))")
    metrics = ServiceMetrics()
    hub = LiveHub()
    state = ServiceState(runtime=runtime, catalog=WorkflowCatalog(runtime, workflows), auth=auth,
                         hub=hub, metrics=metrics, options=options or ServiceOptions())
    hub.on_new_record = _metrics_feed(state)
    _wire(runtime, hub)
    app = FastAPI(title="xflow-runtime", version=API_VERSION, lifespan=_lifespan, docs_url=None, redoc_url=None,
                  description="Workflow instances, CloudEvents, agent chat and streams (specs/service.md).")
    app.state.xflow = state
    install_problem_handlers(app)
    for module in (routes_instances, routes_graph, routes_events, routes_chat, routes_memory, routes_privacy,
                   routes_ops, routes_tasks, routes_callbacks):
        app.include_router(module.router)
    if mcp:  # the exposed workflows as MCP tools at /mcp (the mcp extra; specs/mcp.md)
        from xflow_runtime.service import mcp_server

        mcp_server.install(app, state, host=mcp_host, wait_seconds=mcp_wait_seconds)
    if runtime.a2a is not None and runtime.a2a.push_ready:  # A2A agents' push callbacks (specs/a2a.md §3)
        app.include_router(routes_a2a_callbacks.router)
    if a2a_agents:  # the exposed agent workflows as A2A agents (specs/a2a.md §5)
        from xflow_runtime.service.a2a_server import mount_a2a_agents

        mount_a2a_agents(app, state)
    if console:  # the web console under /ui: page shells and scripts only, no route of its own in /v1
        from xflow_runtime.service import console as console_pages

        app.include_router(console_pages.router)
    if sonataflow_routes:  # last: its /{workflowId} paths must not shadow any other route
        from xflow_runtime.service import routes_sonataflow

        app.include_router(routes_sonataflow.router)
    app.add_middleware(ServiceMiddleware, max_body_bytes=state.options.max_body_bytes, metrics=metrics,
                       body_timeout=state.options.body_timeout_seconds,
                       request_timeout=state.options.request_timeout)
    return app


def _wire(runtime: "Runtime", hub: LiveHub) -> None:
    """The runtime reports every record and reply token to the hub (after any listener the
    embedder installed)."""
    previous_history, previous_tokens = runtime.on_instance_history, runtime.reply_tokens

    def on_history(instance_id: str, record: dict[str, Any]) -> None:
        if previous_history is not None:
            previous_history(instance_id, record)
        hub.record(instance_id, record)

    runtime.on_instance_history = on_history
    runtime.reply_tokens = TokensToHub(hub, previous_tokens)


@dataclass(frozen=True)
class TokensToHub:
    """The runtime's reply tokens, to the embedder's own sink first if there is one, then to the
    hub. Only the instances a stream reads are streamed, unless the embedder's sink reads them all."""

    hub: LiveHub
    previous: ReplyTokenSink | None = None

    def __call__(self, instance_id: str, step: str, delta: str, done: bool) -> None:
        if self.previous is not None:
            self.previous(instance_id, step, delta, done)
        self.hub.tokens(instance_id, step, delta, done)

    def wants(self, instance_id: str) -> bool:
        if self.previous is not None and (not isinstance(self.previous, SelectiveReplyTokenSink)
                                          or self.previous.wants(instance_id)):
            return True
        return self.hub.wants_tokens(instance_id)


def _metrics_feed(state: ServiceState) -> Any:
    entered: dict[str, tuple[float, str]] = {}

    def feed(instance_id: str, record: dict[str, Any]) -> None:
        workflow = state.workflow_of.get(instance_id, "other")
        state.metrics.observe_record(workflow, record, entered, instance_id)
        if record.get("event") in ("workflow_completed", "workflow_failed"):
            state.workflow_of.pop(instance_id, None)

    return feed


@asynccontextmanager
async def service_lifespan(app: FastAPI) -> AsyncIterator[None]:
    from contextlib import AsyncExitStack

    state: ServiceState = app.state.xflow
    await state.open()
    try:
        async with AsyncExitStack() as stack:
            for lifespan in state.lifespans:
                await stack.enter_async_context(lifespan())
            yield
    finally:
        state.draining = True
        await state.runtime.close()


_lifespan = service_lifespan
