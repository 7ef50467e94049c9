"""A real HTTP server on 127.0.0.1 that records every request and answers from a route table."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qsl, unquote, urlsplit


@dataclass
class Recorded:
    method: str
    raw_path: str
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes
    request_line: str = ""  # exactly as received, e.g. "GET /items?color=blue HTTP/1.1"

    def json(self) -> Any:
        return json.loads(self.body)

    def form(self) -> dict[str, list[str]]:
        result: dict[str, list[str]] = {}
        for key, value in parse_qsl(self.body.decode(), keep_blank_values=True):
            result.setdefault(key, []).append(value)
        return result


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0

    def encoded(self) -> tuple[bytes, str]:
        if isinstance(self.body, (bytes, str)):
            data = self.body.encode() if isinstance(self.body, str) else self.body
            return data, self.headers.get("Content-Type", "text/plain")
        if self.body is None:
            return b"", ""
        return json.dumps(self.body).encode(), "application/json"


Handler = Callable[[Recorded], Reply]


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that time out or vanish mid-reply are part of the tests


class RecordingServer:
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.routes: dict[tuple[str, str], Reply | Handler] = {}
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, like real servers
            disable_nagle_algorithm = True  # headers and body are separate writes

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def _serve(self) -> None:
                split = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                recorded = Recorded(
                    method=self.command, raw_path=split.path, path=unquote(split.path),
                    query=parse_qsl(split.query, keep_blank_values=True),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self.rfile.read(length) if length else b"", request_line=self.requestline,
                )
                server.requests.append(recorded)
                route = server.routes.get((self.command, split.path)) or server.routes.get((self.command, "*"))
                reply = route(recorded) if callable(route) else (route or Reply(404, {"error": "no route"}))
                if reply.delay:
                    threading.Event().wait(reply.delay)
                data, content_type = reply.encoded()
                self.send_response(reply.status)
                if content_type:
                    self.send_header("Content-Type", content_type)
                for key, value in reply.headers.items():
                    if key != "Content-Type":
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        self._server = _QuietServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def route(self, method: str, path: str, reply: Reply | Handler) -> None:
        self.routes[(method.upper(), path)] = reply

    def only(self, method: str | None = None, path: str | None = None) -> list[Recorded]:
        return [r for r in self.requests if (method is None or r.method == method) and (path is None or r.path == path)]

    def start(self) -> "RecordingServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
