"""The service's time bounds, against a real ``xflow serve`` (specs/service.md, "Limits"): a body
that does not arrive in time is answered 408, a request that starts no response within the
request timeout is answered 504 (both problem+json), and neither bound cuts a response that has
started (an SSE stream) nor a deliberate wait below it."""

from __future__ import annotations

import socket
import sqlite3
import time
from typing import Iterator

import httpx
import pytest

from tests.service.support import WORKFLOWS, ServiceProcess, assert_problem


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    root = tmp_path_factory.mktemp("timeouts")
    process = ServiceProcess(WORKFLOWS, f"sqlite:///{root / 'store' / 'xflow.sqlite'}", auth="none",
                             extra=["--body-timeout", "1", "--max-wait", "1", "--reply-timeout", "1",
                                    "--request-timeout", "2"]).start()
    yield process
    process.stop()


def raw_request(port: int, head: bytes, body_part: bytes, *, wait: float) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head + body_part)
        time.sleep(wait)
        answer = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return answer
            answer += chunk
            if b"\r\n\r\n" in answer and answer.endswith(b"}"):
                return answer


def test_a_body_that_stops_arriving_is_answered_408(server: ServiceProcess) -> None:
    head = (b"POST /v1/workflows/greet/instances HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\nConnection: close\r\n\r\n")
    answer = raw_request(server.port, head, b'{"name": "A', wait=0)
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line.startswith(b"HTTP/1.1 408"), answer[:300]
    assert b"application/problem+json" in rest and b"request-body-timeout" in rest
    # Nothing was started by the half request.
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert client.get("/v1/instances").json()["items"] == []


def test_a_stalled_request_is_answered_504_and_the_service_goes_on(server: ServiceProcess) -> None:
    # Another process holds the durable store's write lock: the start cannot write its instance.
    database = server.db_url.removeprefix("sqlite:///")
    with httpx.Client(base_url=server.url, timeout=30) as client:
        locker = sqlite3.connect(database, isolation_level=None, timeout=30)
        locker.execute("BEGIN EXCLUSIVE")
        try:
            started = time.monotonic()
            stalled = client.post("/v1/workflows/greet/instances", json={"name": "Ann"},
                                  headers={"Idempotency-Key": "stalled-1"})
            took = time.monotonic() - started
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        body = assert_problem(stalled, 504) if stalled.status_code < 500 else stalled.json()
        assert stalled.status_code == 504 and body["type"] == "urn:xflow:problem:request-timeout", stalled.text
        assert stalled.headers["content-type"].startswith("application/problem+json")
        assert took >= 2
        # Retried with the same key once the store is free: one instance, never two.
        retried = client.post("/v1/workflows/greet/instances", json={"name": "Ann"},
                              headers={"Idempotency-Key": "stalled-1"})
        assert retried.status_code in (200, 201), retried.text
        again = client.post("/v1/workflows/greet/instances", json={"name": "Ann"},
                            headers={"Idempotency-Key": "stalled-1"})
        assert again.json()["id"] == retried.json()["id"]
        assert client.get("/readyz").status_code == 200


def test_a_deliberate_wait_and_a_stream_are_not_cut(server: ServiceProcess) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        started = client.post("/v1/workflows/approval/instances", json={}, headers={"Prefer": "wait=5"})
        assert started.status_code == 201, started.text  # the wait was capped at 1 s, under the 2 s bound
        instance = started.json()["id"]
        with client.stream("GET", f"/v1/instances/{instance}/stream") as stream:
            began = time.monotonic()
            for _ in stream.iter_lines():
                if time.monotonic() - began > 3:  # longer than the request timeout
                    break
        assert time.monotonic() - began > 3
