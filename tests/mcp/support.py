"""Real MCP servers for the tests: the test server over Streamable HTTP on 127.0.0.1 (uvicorn in a
thread of its own, optionally behind a bearer-token check), and small helpers."""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from xflow_runtime.plan import WorkflowPlan, compile_plan

REPO = Path(__file__).resolve().parents[2]
STDIO_COMMAND = {"command": sys.executable, "arguments": ["-m", "tests.mcp.servers"], "cwd": str(REPO)}
ERAS = ("legacy", "2026-07-28")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class _BearerCheck:
    """ASGI middleware: 401 unless ``Authorization: Bearer <token>``; remembers what it saw."""

    def __init__(self, app: Any, token: str):
        self.app, self.token = app, token
        self.seen: list[str | None] = []

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
            self.seen.append(headers.get("authorization"))
            if headers.get("authorization") != f"Bearer {self.token}":
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": b'{"error":"unauthorized"}'})
                return
        await self.app(scope, receive, send)


class HttpMcpServer:
    """``with HttpMcpServer() as server: server.url``: the test server on 127.0.0.1."""

    def __init__(self, token: str | None = None, server: Any = None):
        from tests.mcp.servers import build_server

        self.mcp = server or build_server("http-test")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        app = self.mcp.streamable_http_app()
        self.guard = _BearerCheck(app, token) if token else None
        self._app = self.guard or app
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "HttpMcpServer":
        import uvicorn

        config = uvicorn.Config(self._app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the MCP HTTP test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


def workflow(text: str, **fields: Any) -> WorkflowPlan:
    document = yaml.safe_load(text)
    document.setdefault("specVersion", "0.8")
    document.setdefault("id", "mcp-test")
    document.update(fields)
    return compile_plan(document)
