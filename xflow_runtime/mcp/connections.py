"""The MCP connections of one instance: one owner task per server, closed with the instance.

The SDK's stdio and HTTP transports run anyio task groups; entering a ``Client`` in one asyncio
task and leaving it in another breaks them ("exit cancel scope in a different task",
modelcontextprotocol/python-sdk #577). So each connection has an owner task that enters the
``Client``, hands it out through a future, waits for the close signal and leaves it; callers in
any task send requests through the connected session (the SDK multiplexes them). A connection
that breaks (the server exited) is dropped and the next request opens a new one. The instance's
execution closes every connection when it ends (:func:`close_instance_connections`), so none
outlives it; the SDK is imported on the first connection only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any

from xflow_runtime.errors import WorkflowError
from xflow_runtime.interpreter.state_run import StateRun
from xflow_runtime.mcp import NOT_INSTALLED, UNAVAILABLE
from xflow_runtime.mcp.config import McpServerDef

#: Slack granted over the per-request timeout the SDK enforces (it cancels the request itself).
HARD_BOUND_SLACK = 5.0


class Connection:
    def __init__(self, server: McpServerDef, open_client: Any):
        self.server = server
        self._open_client = open_client  # () -> async context manager yielding an mcp.Client
        self._ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self.broken = False
        self.task = asyncio.create_task(self._own(), name=f"mcp-connection:{server.name}")

    async def _own(self) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                async with asyncio.timeout(self.server.timeout):
                    client = await stack.enter_async_context(await self._open_client())
                self._ready.set_result(client)
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - reported to the callers waiting for the client
            self.broken = True
            if not self._ready.done():
                self._ready.set_exception(exc)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
        finally:
            self.broken = True

    async def client(self) -> Any:
        return await asyncio.shield(self._ready)

    async def close(self) -> None:
        self._stop.set()
        if not self._ready.done():
            self.task.cancel()
        with contextlib.suppress(BaseException):
            await self.task
        if not self._ready.done():  # cancelled before its first step: nobody may wait forever
            self._ready.set_exception(ConnectionError("the connection was closed"))
        if not self._ready.cancelled():
            self._ready.exception()  # retrieved: no "exception never retrieved" warning


class InstanceConnections:
    """The connections of one (top-level) instance, keyed by server definition."""

    def __init__(self, *, secrets: Any, constants: Any, in_process: Any = None):
        self._in_process = dict(in_process or {})
        self._connections: dict[int, Connection] = {}
        self._lock = asyncio.Lock()
        self._secrets, self._constants = secrets, constants
        self._function_context: Any = None  # auth: bearer/basic headers, OAuth2 client credentials
        #: the last HTTP status each HTTP server answered (a 401 reaches us as JSON-RPC -32603)
        self.http_status: dict[str, int] = {}
        #: OpenTelemetry attributes of each server's transport (``network.transport``, ``server.*``)
        self.network: dict[str, dict[str, Any]] = {}

    async def client(self, server: McpServerDef, variables: Any) -> tuple[Connection, Any]:
        async with self._lock:
            connection = self._connections.get(id(server))
            if connection is None or connection.broken:
                if connection is not None:
                    await connection.close()
                connection = Connection(server, lambda: self._make_client(server, variables))
                self._connections[id(server)] = connection
        try:
            return connection, await connection.client()
        except WorkflowError:
            raise
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError) and not connection.broken:
                raise
            raise unavailable(server, exc) from None

    async def drop(self, connection: Connection) -> None:
        async with self._lock:
            if self._connections.get(id(connection.server)) is connection:
                del self._connections[id(connection.server)]
        await connection.close()

    async def aclose(self) -> None:
        connections, self._connections = list(self._connections.values()), {}
        for connection in connections:
            await connection.close()
        if self._function_context is not None:
            await self._function_context.aclose()

    async def _make_client(self, server: McpServerDef, variables: Any) -> Any:
        try:
            from mcp import Client
            from mcp_types import Implementation
        except ImportError:
            raise WorkflowError("MCP servers need the optional extra: pip install 'xflow-runtime[mcp]'",
                                code=NOT_INSTALLED) from None
        if server.name in self._in_process:
            target = self._in_process[server.name]
            self.network[server.name] = {}
        else:
            target = await (self._stdio_target(server, variables) if server.kind == "stdio"
                            else self._http_target(server, variables))
        return Client(target, mode=server.protocol, read_timeout_seconds=server.timeout, cache=None,
                      client_info=Implementation(name="xflow-runtime", version="0.1.0"),
                      elicitation_callback=_decline_elicitation)

    async def _stdio_target(self, server: McpServerDef, variables: Any) -> Any:
        import shutil
        import sys

        from mcp import StdioServerParameters

        self.network[server.name] = {"network.transport": "pipe"}
        env = {name: os.environ[name] for name in server.inherit_environment if name in os.environ}
        rendered = await server.environment.render_async(None, variables) if server.environment else {}
        env.update({str(key): _text(value) for key, value in (rendered or {}).items() if value is not None})
        assert server.command is not None  # a stdio server (config.py checks it)
        # The SDK adds its own base set (HOME, PATH, USER …) to any environment; a small launcher
        # drops everything but the allowed names before the server starts. Only names pass through
        # the command line (visible to `ps`), the values through the environment.
        command = shutil.which(server.command) or server.command
        launcher = ["-I", "-c", _EXEC_WITH_ONLY, ",".join(sorted(env)), command, *server.arguments]
        return StdioServerParameters(command=sys.executable, args=launcher, env=env, cwd=server.cwd)

    async def _http_target(self, server: McpServerDef, variables: Any) -> Any:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        assert server.endpoint is not None  # an HTTP server (config.py checks it)
        url = await server.endpoint.render_async(None, variables)
        self.network[server.name] = _http_network(str(url))
        headers = await server.headers.render_async(None, variables) if server.headers else {}
        headers = {str(key): _text(value) for key, value in (headers or {}).items() if value is not None}
        if server.auth is not None:
            from xflow_runtime.functions.auth import auth_headers

            headers.update(await auth_headers(server.auth, self._functions()))
        # streamable_http_client does not close a client it was given: the exit stack of the
        # connection's owner task does, through this context manager.
        async def remember_status(response: Any) -> None:
            self.http_status[server.name] = response.status_code

        http = httpx2.AsyncClient(headers=headers, event_hooks={"response": [remember_status]},
                                  timeout=httpx2.Timeout(server.timeout, connect=min(10.0, server.timeout)))
        return _ClosingTransport(streamable_http_client(str(url), http_client=http), http)

    def _functions(self) -> Any:
        if self._function_context is None:
            from xflow_runtime.functions.context import FunctionContext

            self._function_context = FunctionContext(secrets=self._secrets, constants=self._constants)
        return self._function_context


class _ClosingTransport(contextlib.AbstractAsyncContextManager):
    """The HTTP transport plus the ``httpx2`` client it uses, closed in one exit."""

    def __init__(self, transport: Any, http: Any):
        self._transport, self._http = transport, http

    async def __aenter__(self) -> Any:
        return await self._transport.__aenter__()

    async def __aexit__(self, *exc_info: Any) -> Any:
        try:
            return await self._transport.__aexit__(*exc_info)
        finally:
            await self._http.aclose()


async def _decline_elicitation(context: Any, params: Any) -> Any:
    """Declaring elicitation lets 2026-07-28 servers answer ``input_required`` (parked as a durable
    wait by agent tools); a legacy server's mid-call request cannot wait that long: declined."""
    from mcp_types import ElicitResult

    return ElicitResult(action="decline")


def unavailable(server: McpServerDef, exc: BaseException) -> WorkflowError:
    message = _describe(exc)
    return WorkflowError(f"MCP server {server.name!r} is unavailable: {message}", code=UNAVAILABLE,
                         details={"server": server.name})


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions)
    if isinstance(exc, (TimeoutError, asyncio.CancelledError)):
        return "no answer in time"
    return f"{type(exc).__name__}: {exc}"


#: ``python -I -c _EXEC_WITH_ONLY NAMES COMMAND ARGS…``: exec COMMAND with only the variables NAMES.
_EXEC_WITH_ONLY = ("import os, sys; keep = set(filter(None, sys.argv[1].split(','))); "
                   "env = {k: v for k, v in os.environ.items() if k in keep}; f = sys.argv[2]; "
                   "(os.execve if os.path.isabs(f) else os.execvpe)(f, sys.argv[2:], env)")


def _http_network(url: str) -> dict[str, Any]:
    """Host and port only: the rest of a URL may carry secrets."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    network: dict[str, Any] = {"network.transport": "tcp"}
    try:
        port = parts.port
    except ValueError:  # not a port: the connection reports it
        return network
    if parts.hostname:
        network["server.address"] = parts.hostname
        network["server.port"] = port or (443 if parts.scheme == "https" else 80)
    return network


def _text(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value)


def connections_for(run: StateRun) -> InstanceConnections:
    """The connections of ``run``'s top-level instance (created on first use)."""
    slot = run.services.mcp
    if slot.value is None:
        slot.value = InstanceConnections(secrets=run.secrets, constants=run.plan.constants,
                                         in_process=run.services.mcp_servers)
    connections: InstanceConnections = slot.value
    return connections


async def close_instance_connections(services: Any) -> None:
    connections = services.mcp.value
    if connections is not None:
        services.mcp.value = None
        # on a virtual-time loop (engine/clock.py) the shutdown waits of a stdio server are real work
        busy = getattr(asyncio.get_running_loop(), "busy", None)
        with busy() if busy is not None else contextlib.nullcontext():
            await connections.aclose()
