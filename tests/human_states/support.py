"""A real ``xflow serve`` process on 127.0.0.1 (durable engine on a SQLite file of the test,
HS256 JWTs whose ``groups`` claim names the caller's groups) and a real HTTP client."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
JWT_SECRET = "a-test-secret-that-is-long-enough-for-hs256!"
JWT_ENV = "XFLOW_TEST_JWT_SECRET"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Service:
    workflows: Path
    db_url: str
    llm_api_base: str | None = None
    process: subprocess.Popen | None = None
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0) -> "Service":
        self.port = self.port or free_port()
        command = [sys.executable, "-m", "xflow_runtime.cli.main", "serve", "--workflows", str(self.workflows),
                   "--db", self.db_url, "--port", str(self.port), "--auth", "jwt", "--jwt-secret-env", JWT_ENV,
                   "--log-level", "warning"]
        if self.llm_api_base:
            command += ["--llm-api-base", self.llm_api_base]
        env = {**os.environ, "PYTHONPATH": str(ROOT), JWT_ENV: JWT_SECRET, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        log = Path(self.db_url.replace("sqlite:///", "")).parent / f"serve-{self.port}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(command, env=env, cwd=str(ROOT), stdout=open(log, "ab"),
                                        stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"xflow serve exited: {log.read_text()[-3000:]}")
            try:
                if httpx.get(self.url + "/readyz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"xflow serve did not become ready: {log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


def token(user: str, *, tenant: str = "a", role: str = "user", groups: list[str] | None = None) -> dict[str, str]:
    import jwt

    now = int(time.time())
    claims: dict[str, Any] = {"sub": user, "tenant": tenant, "role": role, "iat": now, "exp": now + 3600}
    if groups is not None:
        claims["groups"] = groups
    return {"Authorization": "Bearer " + jwt.encode(claims, JWT_SECRET, algorithm="HS256")}


def eventually(check: Any, timeout: float = 30.0, every: float = 0.2) -> Any:
    """The first truthy result of ``check()`` within ``timeout`` seconds (else AssertionError)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout} s: {check}")
        time.sleep(every)
