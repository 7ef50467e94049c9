"""``xflow serve --workers N`` on PostgreSQL: the service starts instances, its worker processes run
them, and stopping the service drains and stops its workers (specs/deployment.md §1, §5)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.fleet.support import REPO, fleet_table
from tests.service.support import free_port

pytestmark = pytest.mark.postgres

WORKFLOW = """
id: hello
version: '1.0'
specVersion: '0.8'
start: Greet
functions:
  - name: record
    type: custom
    operation: python:tests.fleet.fleet_functions:record
states:
  - name: Greet
    type: operation
    actions:
      - functionRef:
          refName: record
          arguments: {instance: '${ $WORKFLOW.instanceId }', label: greet, n: '${ .n }'}
        actionDataFilter: {toStateData: '${ .greeting }'}
    end: true
"""


def _workers(url: str) -> dict[str, tuple[int, str]]:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return {row[0]: (row[1], row[2]) for row in connection.execute(text(
                "SELECT executor_id, pid, state FROM xflow_workers"))}
    finally:
        engine.dispose()


def _serve(url: str, folder: Path, workers: int, env: dict[str, str] | None = None) -> tuple[Any, str, Any]:
    """``xflow serve --workers N`` on ``url`` with :data:`WORKFLOW` (its log in ``folder/serve.log``)."""
    fleet_table(url)
    (folder / "hello.yaml").write_text(WORKFLOW)
    port = free_port()
    log = open(folder / "serve.log", "ab")
    service = subprocess.Popen(
        [sys.executable, "-m", "xflow_runtime.cli.main", "serve", "--workflows", str(folder), "--db", url,
         "--port", str(port), "--auth", "none", "--workers", str(workers), "--drain-seconds", "5",
         "--log-level", "warning"],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), "FLEET_TEST_DB": url, **(env or {})},
        stdout=log, stderr=subprocess.STDOUT)
    return service, f"http://127.0.0.1:{port}", log


def test_serve_with_workers_runs_instances_in_its_workers(postgres_database_url, tmp_path: Path) -> None:
    url = postgres_database_url
    service, base, log = _serve(url, tmp_path, 2)
    try:
        deadline = time.monotonic() + 120
        while len(_workers_if_any(url)) < 2 or not _ready(base):
            assert service.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "service or workers not ready"
            time.sleep(0.2)
        ids = [httpx.post(f"{base}/v1/workflows/hello/instances", json={"n": n}).json()["id"] for n in range(6)]
        outputs = {}
        while len(outputs) < len(ids):
            assert time.monotonic() < deadline + 60, outputs
            for instance_id in ids:
                body = httpx.get(f"{base}/v1/instances/{instance_id}").json()
                if body["status"] == "completed":
                    outputs[instance_id] = body["output"]["greeting"]
            time.sleep(0.2)
        assert sorted(o["square"] for o in outputs.values()) == [n * n for n in range(6)]
        worker_pids = {pid for pid, _ in _workers(url).values()}
        assert service.pid not in worker_pids and len(worker_pids) == 2
    finally:
        service.send_signal(signal.SIGTERM)
        assert service.wait(timeout=60) in (0, -signal.SIGTERM)  # uvicorn re-raises the stop signal
        log.close()
    assert {state for _, state in _workers(url).values()} == {"exited"}


def _workers_if_any(url: str) -> dict[str, tuple[int, str]]:
    try:
        return _workers(url)
    except Exception:  # noqa: BLE001 - the table is created by the first worker
        return {}


def _ready(base: str) -> bool:
    try:
        return httpx.get(f"{base}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_serve_starts_a_new_worker_when_one_exits(postgres_database_url, tmp_path: Path) -> None:
    """A worker of ``xflow serve --workers`` that exits while the service runs (killed here; a
    worker fenced after a database outage exits 75) is replaced by a new one (a new executor
    id), which runs the instances started afterwards (specs/deployment.md §3)."""
    url = postgres_database_url
    service, base, log = _serve(url, tmp_path, 1, {"XFLOW_DEAD_AFTER_SECONDS": "5"})
    try:
        deadline = time.monotonic() + 120
        while len(_workers_if_any(url)) < 1 or not _ready(base):
            assert service.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "service or worker not ready"
            time.sleep(0.2)
        ((first_id, (first_pid, _)),) = _workers(url).items()
        os.kill(first_pid, signal.SIGKILL)
        while not [e for e, (_, state) in _workers(url).items() if e != first_id and state == "running"]:
            assert service.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
            assert time.monotonic() < deadline + 60, "no new worker"
            time.sleep(0.2)
        instance_id = httpx.post(f"{base}/v1/workflows/hello/instances", json={"n": 3}).json()["id"]
        while (body := httpx.get(f"{base}/v1/instances/{instance_id}").json())["status"] != "completed":
            assert time.monotonic() < deadline + 120, body
            time.sleep(0.2)
        assert body["output"]["greeting"]["square"] == 9
    finally:
        service.send_signal(signal.SIGTERM)
        assert service.wait(timeout=60) in (0, -signal.SIGTERM)
        log.close()
    assert f"worker {first_pid} exited with status -9; starting a new one" in (tmp_path / "serve.log").read_text()
    # the replacement drained and left on the service's stop (it was not started after the stop)
    assert {state for e, (_, state) in _workers(url).items() if e != first_id} == {"exited"}
