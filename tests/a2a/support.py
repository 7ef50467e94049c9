"""The A2A tests' real parts: the ``a2a-sdk`` test agent as a process on 127.0.0.1 (with its call
log), and an ``xflow serve`` process (tests/service/support.py) that takes the agent's push
callbacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.service.support import ROOT, ServiceProcess, bearer, free_port, jwt_token

__all__ = ["AgentProcess", "ROOT", "SECRET", "SECRET_ENV", "ServiceProcess", "TEMPLATE", "WebhookReceiver",
           "eventually", "history", "service_token", "start_and_wait", "view", "write_workflow"]

SECRET_ENV = "XFLOW_TEST_A2A_SECRET"
SECRET = "the-a2a-callback-secret-of-the-tests-0123456789"
TEMPLATE = Path(__file__).with_name("workflows") / "ledger-proxy.yaml"


@dataclass
class AgentProcess:
    """``tests/a2a/agent_server.py`` as a process; ``calls()`` reads its call log."""

    log: Path
    port: int = 0
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> "AgentProcess":
        self.port = self.port or free_port()
        self.process = subprocess.Popen([sys.executable, str(Path(__file__).with_name("agent_server.py")),
                                         str(self.port), str(self.log)],
                                        env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=str(ROOT))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/.well-known/agent-card.json", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError("the A2A test agent did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            self.process = None

    def calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]


def write_workflow(directory: Path, workflow_id: str, agent_port: int, mode: str, poll: str = "PT0.2S",
                   extra: str = "") -> Path:
    text = (TEMPLATE.read_text().replace("id: ledger-proxy", f"id: {workflow_id}")
            .replace("${AGENT_PORT}", str(agent_port)).replace("${MODE}", mode).replace("PT0.2S", poll))
    path = directory / f"{workflow_id}.yaml"
    path.write_text(text + extra)
    return path


def service_token(tenant: str = "a") -> dict[str, str]:
    return bearer(jwt_token(tenant, "svc", role="service", expires_in=3600))


def history(service: ServiceProcess, instance_id: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{service.url}/v1/instances/{instance_id}/history?limit=500", headers=service_token())
    assert response.status_code == 200, response.text
    return response.json()["items"]


def view(service: ServiceProcess, instance_id: str) -> dict[str, Any]:
    return httpx.get(f"{service.url}/v1/instances/{instance_id}", headers=service_token()).json()


def eventually(check: Any, timeout: float = 90.0) -> Any:
    """The first truthy result of ``check()`` within ``timeout`` seconds (else AssertionError)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not reached within {timeout} s: {check}")


def start_and_wait(service: ServiceProcess, workflow_id: str, request: str, wait: int = 30) -> dict[str, Any]:
    """Start an instance and wait (``Prefer: wait``) for its view."""
    response = httpx.post(f"{service.url}/v1/workflows/{workflow_id}/instances", json={"request": request},
                          headers={**service_token(), "Prefer": f"wait={wait}"}, timeout=wait + 30)
    assert response.status_code in (200, 201), response.text
    return response.json()


class WebhookReceiver:
    """A plain HTTP server on 127.0.0.1 that records every POST (headers and JSON body)."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        received: list[dict[str, Any]] = []
        self.received = received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                received.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                 "body": json.loads(self.rfile.read(length) or b"null")})
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
