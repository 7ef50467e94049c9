"""The scripted OpenAI-compatible model server (a real HTTP server on 127.0.0.1).

It runs an asyncio loop in a daemon thread, so thousands of concurrent calls with added latency
cost no threads. Point litellm at it with ``api_base=server.api_base``, model ``openai/<name>``
and any API key::

    with ScriptedModelServer(["Hello!", {"json": {"answer": 42}}]) as server:
        litellm.completion(model="openai/gpt-4o", api_base=server.api_base, api_key="x", messages=...)
        assert server.requests[0].body["messages"][-1]["content"] == ...

Endpoints: ``POST /v1/chat/completions`` (``stream`` false or true), ``POST /v1/embeddings``
(hashed bag-of-words vectors), ``POST …/rerank`` (Cohere's format, scored by hashed-vector
cosine), ``GET /v1/models``. Every request is recorded; the
``Authorization`` header is redacted unless ``record_authorization=True``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from xflow_runtime.testing import wire
from xflow_runtime.testing.http import HttpResponse, serve_http
from xflow_runtime.testing.script import Reply, RequestView, ScriptCursor, as_script

REDACTED = "<redacted>"


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    at: float  # time.monotonic() when it arrived

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages") or [])

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("tools") or [])

    @property
    def tool_names(self) -> list[str]:
        return [tool["function"]["name"] for tool in self.tools]


@dataclass
class _Failure:
    status: int
    message: str
    remaining: int | None  # None: for ever
    model: str | None = None


class ScriptedModelServer:
    """An OpenAI-compatible server answering from a reply script. Use as a context manager, or
    call :meth:`start` / :meth:`stop`."""

    def __init__(self, script: Any = None, *, latency: float | None = None, embedding_dimensions: int = 64,
                 record_authorization: bool = False, host: str = "127.0.0.1", port: int = 0):
        self._script = as_script(script)
        self._cursor = ScriptCursor(self._script)
        self.latency = self._script.latency if latency is None else latency
        self.embedding_dimensions = embedding_dimensions
        self.record_authorization = record_authorization
        self._host, self._port = host, port
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._failures: list[_Failure] = []
        self._chat_calls = 0
        self._in_flight = 0
        self.max_in_flight = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None

    # ------------------------------------------------------------ lifecycle

    @property
    def thread_native_id(self) -> int | None:
        """The OS id of the server's thread (benchmarks subtract its CPU from their process's)."""
        return self._thread.native_id if self._thread is not None else None

    def start(self) -> "ScriptedModelServer":
        if self._loop is not None:
            return self
        loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=loop.run_forever, name="scripted-model-server", daemon=True)
        self._thread.start()
        self._loop = loop
        future = asyncio.run_coroutine_threadsafe(serve_http(self._handle, self._host, self._port), loop)
        self._server = future.result(timeout=10)
        self._port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is None:
            return
        server = self._server

        async def shutdown() -> None:
            if server is not None:
                server.close()
            tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)
        loop.close()

    def __enter__(self) -> "ScriptedModelServer":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ------------------------------------------------------------ public state

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self._port}"

    @property
    def api_base(self) -> str:
        """``base_url + "/v1"``: what litellm's ``api_base`` / ``OPENAI_BASE_URL`` should be."""
        return self.base_url + "/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [request for request in self.requests if request.path.endswith("/chat/completions")]

    @property
    def replies_left(self) -> int:
        with self._lock:
            return self._cursor.replies_left

    def set_script(self, script: Any) -> None:
        """Replace the script (and rewind to its start); recorded requests are kept."""
        with self._lock:
            self._script = as_script(script)
            self._cursor = ScriptCursor(self._script)

    def reset(self, script: Any = None) -> None:
        """Forget recorded requests and pending failures; rewind (or replace) the script."""
        with self._lock:
            if script is not None:
                self._script = as_script(script)
            self._cursor = ScriptCursor(self._script)
            self._requests.clear()
            self._failures.clear()
            self._chat_calls = 0
            self.max_in_flight = 0

    def fail_next(self, count: int = 1, *, status: int = 429, message: str = "scripted failure") -> None:
        """Answer the next ``count`` chat calls with HTTP ``status`` (before consuming the script)."""
        with self._lock:
            self._failures.append(_Failure(status, message, count))

    def fail_model(self, model: str, *, status: int = 500, message: str = "scripted failure",
                   count: int | None = None) -> None:
        """Answer every call for ``model`` (or the next ``count`` of them) with HTTP ``status``."""
        with self._lock:
            self._failures.append(_Failure(status, message, count, model=model))

    # ------------------------------------------------------------ request handling

    async def _handle(self, method: str, path: str, headers: Mapping[str, str], raw_body: bytes) -> HttpResponse:
        try:
            body = json.loads(raw_body) if raw_body else None
        except ValueError:
            return _json_response(400, wire.error_body(400, "request body is not JSON"))
        with self._lock:
            self._requests.append(RecordedRequest(method, path, self._recorded_headers(headers), body, time.monotonic()))
        route = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and route.endswith("/models"):
            return _json_response(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
        if method != "POST" or not isinstance(body, dict):
            return _json_response(404, wire.error_body(404, f"no route for {method} {path}"))
        if route.endswith("/embeddings"):
            await self._delay(None)
            return _json_response(200, wire.embeddings_body(body, self.embedding_dimensions))
        if route.endswith("/chat/completions"):
            return await self._chat(body)
        if route.endswith("/rerank"):
            with self._lock:
                failure = self._take_failure(str(body.get("model", "")), model_only=True)
            if failure is not None:
                return _json_response(failure.status, wire.error_body(failure.status, failure.message))
            return _json_response(200, wire.rerank_body(body, self.embedding_dimensions))
        return _json_response(404, wire.error_body(404, f"no route for {method} {path}"))

    async def _chat(self, body: dict[str, Any]) -> HttpResponse:
        with self._lock:
            self._chat_calls += 1
            call_number = self._chat_calls
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            failure = self._take_failure(str(body.get("model", "")))
            reply = None if failure else self._cursor.next_reply(RequestView.of(body))
        try:
            await self._delay(reply)
        finally:
            with self._lock:
                self._in_flight -= 1
        if failure is not None:
            return _json_response(failure.status, wire.error_body(failure.status, failure.message))
        if reply is None:
            message = "scripted model server: the reply script is exhausted (no reply, rule or default left)"
            return _json_response(400, wire.error_body(400, message))
        if reply.is_error:
            return _json_response(reply.status, wire.error_body(reply.status, reply.error_message))
        created = int(time.time())
        if body.get("stream"):
            chunks = list(wire.completion_chunks(body, reply, call_number, created))
            return HttpResponse(200, {"content-type": "text/event-stream", "cache-control": "no-cache"}, chunks)
        return _json_response(200, wire.completion_body(body, reply, call_number, created))

    def _take_failure(self, model: str, *, model_only: bool = False) -> _Failure | None:
        """The failure to answer with; ``model_only``: only :meth:`fail_model` ones (not chat calls')."""
        for failure in self._failures:
            if model_only and failure.model is None:
                continue
            if failure.model is not None and failure.model != model and failure.model.split("/", 1)[-1] != model:
                continue
            if failure.remaining is not None:
                failure.remaining -= 1
                if failure.remaining <= 0:
                    self._failures.remove(failure)
            return failure
        return None

    async def _delay(self, reply: Reply | None) -> None:
        seconds = reply.latency if reply is not None and reply.latency is not None else self.latency
        if seconds > 0:
            await asyncio.sleep(seconds)

    def _recorded_headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        recorded = dict(headers)
        if not self.record_authorization:
            for name in ("authorization", "api-key", "x-api-key"):
                if name in recorded:
                    recorded[name] = REDACTED
        return recorded


def _json_response(status: int, payload: Any) -> HttpResponse:
    return HttpResponse(status, {"content-type": "application/json"}, [json.dumps(payload).encode()])


def chat_contents(requests: Iterable[RecordedRequest]) -> list[list[tuple[str, str]]]:
    """(role, text) pairs of every chat request: a compact shape for assertions."""
    from xflow_runtime.testing.script import message_text

    return [[(m.get("role", ""), message_text(m.get("content"))) for m in request.messages] for request in requests]
