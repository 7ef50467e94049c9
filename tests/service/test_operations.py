"""Operations: health, readiness, metrics, the OpenAPI document (checked in), `xflow keys`,
`--auth none` only on loopback, and a restart mid-conversation (SIGTERM drains; the
conversation continues on the next server)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.service.support import ROOT, WORKFLOWS, ServiceProcess, assert_problem, bearer

pytestmark = pytest.mark.slow
OPENAPI = ROOT / "specs" / "service-openapi.json"


def xflow(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xflow_runtime.cli.main", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=str(ROOT), timeout=120)


def test_health_readiness_and_metrics(service, keys) -> None:
    with httpx.Client(base_url=service.url, timeout=30) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        assert client.get("/readyz").json() == {"status": "ready"}
        client.post("/v1/workflows/greet/instances", json={"name": "m"}, headers={**bearer(keys["a"]), "Prefer": "wait=10"})
        client.get("/v1/instances/not-there", headers=bearer(keys["a"]))
        text = client.get("/metrics").text
    assert 'xflow_http_requests_total{method="GET",route="/v1/instances/{instance_id}",status_class="4xx"}' in text
    assert 'xflow_instances_started_total{workflow="greet"}' in text
    assert 'xflow_instances_finished_total{outcome="completed",workflow="greet"}' in text
    assert "xflow_state_duration_seconds_bucket" in text and 'xflow_instances{status="completed"}' in text
    assert "not-there" not in text  # never an id in a label


def test_the_openapi_document_is_served_and_matches_the_checked_in_one(service) -> None:
    served = httpx.get(service.url + "/openapi.json", timeout=30).json()
    if os.environ.get("XFLOW_UPDATE_OPENAPI"):
        OPENAPI.write_text(json.dumps(served, indent=1, sort_keys=True) + "\n")
    assert served == json.loads(OPENAPI.read_text()), "API changed: review, then XFLOW_UPDATE_OPENAPI=1"
    paths = served["paths"]
    for path in ("/v1/workflows", "/v1/workflows/{workflow_id}/instances", "/v1/instances", "/v1/instances/{instance_id}",
                 "/v1/instances/{instance_id}/history", "/v1/instances/{instance_id}/cancel",
                 "/v1/instances/{instance_id}/resume", "/v1/events", "/v1/instances/{instance_id}/messages",
                 "/v1/instances/{instance_id}/stream", "/healthz", "/readyz", "/metrics",
                 "/v1/chats", "/v1/chats/{chat_id}", "/v1/agents/{agent}/memories",
                 "/v1/agents/{agent}/memories/{memory_id}", "/v1/agents/{agent}/memories/search",
                 "/v1/agents/{agent}/facts", "/v1/agents/{agent}/facts/{fact_id}", "/v1/users/{user}",
                 "/v1/users/{user}/consent", "/v1/users/{user}/export"):
        assert path in paths
    memories = paths["/v1/agents/{agent}/memories"]["post"]
    assert memories["requestBody"]["content"]["application/json"]["schema"]["required"] == ["title", "content"]
    assert paths["/v1/agents/{agent}/memories/search"]["post"]["requestBody"]["content"]["application/json"][
        "schema"]["properties"]["limit"]["maximum"] == 50
    assert "text/event-stream" in paths["/v1/instances/{instance_id}/stream"]["get"]["responses"]["200"]["content"]


def test_keys_cli_creates_lists_and_revokes(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'x.sqlite'}"
    created = xflow("keys", "create", "--tenant", "acme", "--role", "user", "--user", "ann", "--db", db, "--json")
    assert created.returncode == 0, created.stderr
    record = json.loads(created.stdout)
    assert record["key"].startswith("xfk_") and record["tenant"] == "acme" and record["user"] == "ann"
    listed = [json.loads(line) for line in xflow("keys", "list", "--db", db, "--json").stdout.splitlines()]
    assert "ann" in xflow("keys", "list", "--db", db).stdout  # text for people without --json
    assert [k["id"] for k in listed] == [record["id"]] and "key" not in listed[0]
    assert xflow("keys", "revoke", record["id"], "--db", db).returncode == 0
    assert xflow("keys", "revoke", record["id"], "--db", db).returncode == 1
    assert xflow("keys", "create", "--tenant", "acme", "--role", "user", "--db", db).returncode == 2


def test_auth_none_is_refused_off_loopback(tmp_path: Path) -> None:
    refused = xflow("serve", "--workflows", str(WORKFLOWS), "--db", f"sqlite:///{tmp_path / 'x.sqlite'}",
                    "--host", "0.0.0.0", "--auth", "none")
    assert refused.returncode == 2 and "loopback" in refused.stderr


def test_a_restart_mid_conversation_continues_it(tmp_path: Path, model_server) -> None:
    db = f"sqlite:///{tmp_path / 'store' / 'x.sqlite'}"
    first = ServiceProcess(WORKFLOWS, db, llm_api_base=model_server.api_base, auth="none").start()
    try:
        with httpx.Client(base_url=first.url, timeout=60) as client:
            started = client.post("/v1/workflows/chat/instances", json={"message": "hi"}, headers={"Prefer": "wait=30"}).json()
            assert started["status"] == "waiting"
            assert client.post(f"/v1/instances/{started['id']}/messages", json={"text": "one"}).json()["turn"] == 2
    finally:
        # SIGTERM drains; uvicorn re-raises the signal after its graceful shutdown
        assert first.stop() in (0, -signal.SIGTERM) and "Traceback" not in first.log.read_text()
    second = ServiceProcess(WORKFLOWS, db, llm_api_base=model_server.api_base, auth="none").start()
    try:
        with httpx.Client(base_url=second.url, timeout=60) as client:
            reply = client.post(f"/v1/instances/{started['id']}/messages", json={"text": "two"}).json()
            assert reply["status"] == "waiting" and reply["turn"] == 3
            done = client.post(f"/v1/instances/{started['id']}/messages", json={"text": "bye"}).json()
            assert done["status"] == "completed"
            history = client.get(f"/v1/instances/{started['id']}/history").json()["items"]
            replies = [r["turn"] for r in history if r["event"] == "agent_reply"]
            assert replies == [1, 2, 3]  # each turn once: nothing replayed twice, nothing lost
            assert_problem(client.get("/v1/instances/nope"), 404)
    finally:
        second.stop()


def test_the_app_mounts_under_a_prefix(tmp_path: Path) -> None:
    """Starlette never runs a mounted app's lifespan: the service opens on its first request, and
    its links carry the mount prefix."""
    from tests.service.support import free_port

    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XFLOW_TEST_DB": f"sqlite:///{tmp_path / 'x.sqlite'}",
           "XFLOW_TEST_WORKFLOWS": str(WORKFLOWS)}
    host = subprocess.Popen([sys.executable, "-m", "uvicorn", "tests.service.mounted_host:app", "--port", str(port),
                             "--log-level", "warning"], env=env, cwd=str(ROOT))
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 300
        while True:
            try:
                if httpx.get(url + "/", timeout=2).text == "host":
                    break
            except httpx.HTTPError:
                assert time.monotonic() < deadline
            time.sleep(0.2)
        with httpx.Client(base_url=url, timeout=300) as client:
            started = client.post("/wf/v1/workflows/greet/instances", json={"name": "m"}, headers={"Prefer": "wait=30"})
            assert started.status_code == 201, started.text
            assert started.headers["location"].startswith("/wf/v1/instances/")
            assert client.get(started.headers["location"]).json()["output"] == {"name": "m", "greeting": "hello"}
            assert_problem(client.get("/wf/v1/nothing"), 404)
    finally:
        host.terminate()
        host.wait(60)
