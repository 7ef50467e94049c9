"""``xflow serve --a2a``: every workflow whose metadata says ``xflow.a2a.expose: 'true'`` is an
A2A 1.0 agent at ``/a2a/agents/<workflowId>/`` (specs/a2a.md §5): its card at
``…/.well-known/agent-card.json``, JSON-RPC (and the SDK's 0.3 compatibility) at ``…/``.

The protocol layer is ``a2a-sdk``'s own (its JSON-RPC dispatcher and SSE framing); the tasks are
our instances, read from the runtime's durable store on every call (:mod:`a2a_tasks` maps them),
so a task outlives the process that started it. Handlers stay thin: starting, messaging,
cancelling and waiting are the same runtime calls the ``/v1`` routes make."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from xflow_runtime.service import a2a_tasks
from xflow_runtime.service.problems import Problem, problem_response
from xflow_runtime.service.state import ServiceState

PREFIX = "/a2a/agents"
CARD_PATH = "/.well-known/agent-card.json"


def mount_a2a_agents(app: Any, state: ServiceState) -> None:
    from xflow_runtime.runtime.memory import chat_memory_url
    from xflow_runtime.service.a2a_handler import task_view
    from xflow_runtime.service.a2a_push import PushConfigs, PushDispatcher

    async def view(task_id: str) -> dict[str, Any]:
        return (await task_view(state, task_id))[0]

    url = state.runtime.chat_memory_url or chat_memory_url(state.runtime.database_url)
    push = PushDispatcher(PushConfigs(url), view, allow_private=state.options.a2a_private_webhooks)
    previous = state.hub.on_new_record

    def on_record(instance_id: str, record: dict[str, Any]) -> None:
        if previous is not None:
            previous(instance_id, record)
        push.on_record(instance_id, record)

    state.hub.on_new_record = on_record
    app.mount(PREFIX, A2AAgents(state, push))


class A2AAgents:
    """ASGI app: ``/<workflowId>/…`` → that workflow's card or its JSON-RPC endpoint (one SDK
    route set per workflow revision, built on first use)."""

    def __init__(self, state: ServiceState, push: Any) -> None:
        self.state = state
        self.push = push
        self._apps: dict[tuple[str, int], Any] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        path, root = scope.get("path", ""), scope.get("root_path", "")
        if root and path.startswith(root):  # Starlette ≥ 0.35 keeps the full path in a mount
            path = path[len(root):]
        workflow_id, _, rest = path.lstrip("/").partition("/")
        try:
            await self.state.open()
            definition = self.state.catalog.get(workflow_id) if workflow_id else None
            if definition is None or not a2a_tasks.exposed(definition.plan.metadata):
                raise Problem("not-found", f"no A2A agent {workflow_id}")
            base = f"{str(request.base_url).rstrip('/')}{PREFIX}/{workflow_id}/"
            if "/" + rest == CARD_PATH and scope["method"] == "GET":
                response: Response = JSONResponse(agent_card_json(definition, base))
                await response(scope, receive, send)
                return
            scope["xflow.principal"] = await self.state.auth.authenticate(request)
        except Problem as problem:
            await problem_response(problem, scope.get("xflow.request_id"))(scope, receive, send)
            return
        app = self._app(definition)
        inner = dict(scope)
        inner["root_path"] = f"{root}/{workflow_id}"
        inner["path"] = f"{root}/{workflow_id}/{rest}"
        await app(inner, receive, send)

    def _app(self, definition: Any) -> Any:
        key = (definition.workflow_id, definition.revision)
        app = self._apps.get(key)
        if app is None:
            from a2a.server.routes import create_jsonrpc_routes
            from starlette.applications import Starlette

            handler = WorkflowAgent(self.state, definition.workflow_id, self.push)
            app = Starlette(routes=create_jsonrpc_routes(handler, rpc_url="/", context_builder=_ContextBuilder(),
                                                         enable_v0_3_compat=True))
            self._apps = {k: v for k, v in self._apps.items() if k[0] != definition.workflow_id}
            self._apps[key] = app
        return app


def agent_card_json(definition: Any, url: str) -> dict[str, Any]:
    """The card of one exposed workflow: one skill (the workflow), JSON-RPC at ``url``."""
    plan = definition.plan
    description = plan.description or plan.name or definition.workflow_id
    skill: dict[str, Any] = {"id": definition.workflow_id, "name": plan.name or definition.workflow_id,
                             "description": description, "tags": ["xflow"]}
    if definition.input_schema is not None:
        skill["inputModes"] = ["application/json", "text/plain"]
    return {"name": plan.name or definition.workflow_id, "description": description,
            "version": definition.version or str(definition.revision),
            "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": True, "pushNotifications": True},
            "defaultInputModes": ["text/plain", "application/json"], "defaultOutputModes": ["application/json"],
            "skills": [skill],
            "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
            "securityRequirements": [{"schemes": {"bearer": {"list": []}}}]}


def _ContextBuilder() -> Any:  # noqa: N802  (a class made on first use: the SDK is imported lazily)
    from a2a.server.context import ServerCallContext
    from a2a.server.routes.common import ServerCallContextBuilder

    class ContextBuilder(ServerCallContextBuilder):
        def build(self, request: Request) -> ServerCallContext:
            return ServerCallContext(state={"principal": request.scope["xflow.principal"],
                                            "headers": dict(request.headers)})

    return ContextBuilder()


def WorkflowAgent(state: ServiceState, workflow_id: str, push: Any) -> Any:  # noqa: N802
    from xflow_runtime.service.a2a_handler import workflow_agent

    return workflow_agent(state, workflow_id, push)
