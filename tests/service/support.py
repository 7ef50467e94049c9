"""A real ``xflow serve`` process on 127.0.0.1 and a real HTTP client (httpx), for the service
tests. The server runs the durable engine on a SQLite file of the test, authenticates API keys
(created in the same database) and HS256 JWTs, and sends LLM calls to a scripted model server."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import httpx

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = Path(__file__).with_name("workflows")
JWT_SECRET = "a-test-secret-that-is-long-enough-for-hs256!"
JWT_ENV = "XFLOW_TEST_JWT_SECRET"
PROBLEM = "application/problem+json"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class ServiceProcess:
    workflows: Path
    db_url: str
    llm_api_base: str | None = None
    auth: str = "keys,jwt"
    extra: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # more environment (changeable between restarts)
    process: subprocess.Popen | None = None
    port: int = 0
    log: Path | None = None
    log_dir: Path | None = None  # where the log goes (default: beside a SQLite store; needed for PostgreSQL)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 300.0) -> "ServiceProcess":
        self.port = self.port or free_port()  # a restart keeps the address its clients know
        command = [sys.executable, "-m", "xflow_runtime.cli.main", "serve", "--workflows", str(self.workflows),
                   "--db", self.db_url, "--port", str(self.port), "--auth", self.auth, "--key-cache-seconds", "0",
                   "--log-level", "warning", *self.extra]
        if "jwt" in self.auth:
            command += ["--jwt-secret-env", JWT_ENV]
        if self.llm_api_base:
            command += ["--llm-api-base", self.llm_api_base]
        env = {**os.environ, "PYTHONPATH": str(ROOT), JWT_ENV: JWT_SECRET, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
               **self.env}
        self.log = (self.log_dir or Path(self.db_url.replace("sqlite:///", "")).parent) / f"serve-{self.port}.log"
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(command, env=env, cwd=str(ROOT), stdout=open(self.log, "ab"),
                                        stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"xflow serve exited: {self.log.read_text()[-3000:]}")
            try:
                if httpx.get(self.url + "/readyz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"xflow serve did not become ready: {self.log.read_text()[-3000:]}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        code, self.process = self.process.returncode, None
        return code


def store_url(request: Any, service_dir: Path, prefix: str) -> str:
    """The store of a module parametrized ``sqlite``/``postgres``: a SQLite file in ``service_dir``,
    or a new database (``prefix_…``) on the session's PostgreSQL (``postgres_server`` fixture)."""
    if request.param == "sqlite":
        return f"sqlite:///{service_dir / 'store' / 'xflow.sqlite'}"
    import uuid

    import psycopg

    server = request.getfixturevalue("postgres_server")
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server.get_uri(), autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return str(server.get_uri(database=name, driver="psycopg"))


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def jwt_token(tenant: str, user: str, *, role: str = "user", expires_in: float = 600, **claims: Any) -> str:
    import jwt

    now = int(time.time())
    payload = {"sub": user, "tenant": tenant, "role": role, "iat": now, "exp": now + int(expires_in), **claims}
    return jwt.encode(payload, JWT_SECRET, algorithm="HS256")


def assert_problem(response: httpx.Response, status: int | None = None) -> dict[str, Any]:
    """A 4xx problem document whose ``status`` is the HTTP status; never a 5xx or a traceback."""
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:500])
    if status is not None:
        assert response.status_code == status, (response.status_code, response.text[:500])
    assert response.headers["content-type"].startswith(PROBLEM), response.headers
    body = response.json()
    assert body["status"] == response.status_code
    assert body["type"].startswith("urn:xflow:problem:") and body["title"]
    assert "Traceback" not in response.text and "File \"" not in response.text
    return body


def sse_events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """Parse an SSE stream (HTML §9.2.6): yields {event, id, data} per dispatched event; the
    id is the last one seen (it persists across events without an id)."""
    event: dict[str, Any] = {}
    data: list[str] = []
    last_id = None
    for line in lines:
        if line == "":
            if data:
                yield {"event": event.get("event", "message"), "id": last_id, "has_id": "id" in event,
                       "data": json.loads("\n".join(data))}
            event, data = {}, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "id":
            event["id"] = value
            last_id = value
        elif name in ("event", "retry"):
            event[name] = value
