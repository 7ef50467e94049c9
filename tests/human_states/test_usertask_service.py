"""User tasks through the real service: an expense approved, rejected, withdrawn (deleted), timed
out, refused to a user who is not a candidate, with invalid form data refused, and waiting across
a restart of the service (specs/states-human.md)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.human_states.support import eventually, token

pytestmark = pytest.mark.slow

BO = token("bo")                                    # the requester
ANN = token("ann", groups=["managers"])             # a manager
ZED = token("zed", groups=["sales"])                # neither reviewer nor manager
REVIEWER = token("rita")                            # named by the instance input
ADMIN = token("ops", role="service")
OTHER_TENANT = token("ann", tenant="b", groups=["managers"])


@pytest.fixture(scope="module")
def client(service) -> httpx.Client:
    with httpx.Client(base_url=service.url, timeout=60) as http:
        yield http


def start(client: httpx.Client, **input: Any) -> str:
    response = client.post("/v1/workflows/expense-approval/instances", json={"amount": 40, "requester": "bo", **input},
                           headers=BO)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def task_of(client: httpx.Client, instance_id: str, who: dict[str, str] = ANN) -> dict[str, Any]:
    def find() -> dict[str, Any] | None:
        items = client.get("/v1/tasks", headers=who).json()["items"]
        return next((t for t in items if t["instanceId"] == instance_id), None)

    return eventually(find, timeout=90)  # the first instance of a fresh service, on a loaded machine


def finished(client: httpx.Client, instance_id: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        body = client.get(f"/v1/instances/{instance_id}", headers=ADMIN).json()
        return body if body["status"] in ("completed", "failed") else None

    return eventually(done)


def test_a_manager_approves_after_invalid_data_is_refused(client) -> None:
    instance_id = start(client)
    task = task_of(client, instance_id)
    assert task["taskKey"] == "approve-expense" and task["formKey"] == "expense-approval"
    assert task["input"] == {"amount": 40, "requester": "bo"} and task["candidateGroups"] == ["managers"]
    assert task["status"] == "open" and task["dueDate"]
    claimed = client.post(f"/v1/tasks/{task['id']}/claim", headers=ANN)
    assert claimed.status_code == 200 and claimed.json()["claimedBy"] == "ann"
    invalid = client.post(f"/v1/tasks/{task['id']}/complete", json={"data": {"approved": "yes"}}, headers=ANN)
    assert invalid.status_code == 422 and invalid.headers["content-type"].startswith("application/problem+json")
    assert invalid.json()["errors"][0]["pointer"] == "#/data/approved"
    done = client.post(f"/v1/tasks/{task['id']}/complete", json={"data": {"approved": True, "comment": "fine"}},
                       headers=ANN)
    assert done.status_code == 200 and done.json()["status"] == "completed"
    body = finished(client, instance_id)
    assert body["output"] == {"amount": 40, "requester": "bo", "approved": True, "comment": "fine",
                              "status": "approved"}
    again = client.post(f"/v1/tasks/{task['id']}/complete", json={"data": {"approved": False}}, headers=ANN)
    assert again.status_code == 409  # completed once; the second completion changes nothing


def test_the_named_reviewer_rejects(client) -> None:
    instance_id = start(client, reviewer="rita")
    task = task_of(client, instance_id, REVIEWER)
    response = client.post(f"/v1/tasks/{task['id']}/complete", json={"data": {"approved": False}}, headers=REVIEWER)
    assert response.status_code == 200, response.text
    assert finished(client, instance_id)["output"]["status"] == "rejected"


def test_someone_who_is_not_a_candidate_is_refused(client) -> None:
    instance_id = start(client)
    task = task_of(client, instance_id)
    assert all(t["instanceId"] != instance_id for t in client.get("/v1/tasks", headers=ZED).json()["items"])
    for path in ("claim", "complete"):
        refused = client.post(f"/v1/tasks/{task['id']}/{path}", json={"data": {"approved": True}}, headers=ZED)
        assert refused.status_code == 404 and refused.headers["content-type"].startswith("application/problem+json")
    assert client.post(f"/v1/tasks/{task['id']}/claim", headers=OTHER_TENANT).status_code == 404
    # a claim by one manager keeps the others out
    assert client.post(f"/v1/tasks/{task['id']}/claim", headers=ANN).status_code == 200
    other_manager = token("max", groups=["managers"])
    assert client.post(f"/v1/tasks/{task['id']}/claim", headers=other_manager).status_code == 409
    assert client.post(f"/v1/tasks/{task['id']}/unclaim", headers=ANN).json()["status"] == "open"
    assert client.post(f"/v1/tasks/{task['id']}/claim", headers=other_manager).status_code == 200
    client.delete(f"/v1/tasks/{task['id']}", headers=ADMIN)


def test_a_deleted_task_takes_on_delete(client) -> None:
    instance_id = start(client)
    task = task_of(client, instance_id)
    response = client.delete(f"/v1/tasks/{task['id']}", headers=ADMIN)
    assert response.status_code == 200 and response.json()["status"] == "deleted"
    assert finished(client, instance_id)["output"]["status"] == "withdrawn"


def test_a_task_past_its_due_date_takes_on_timeout(client) -> None:
    instance_id = start(client, due="PT2S")
    task = task_of(client, instance_id)
    assert finished(client, instance_id)["output"]["status"] == "escalated"
    assert client.get(f"/v1/tasks/{task['id']}", headers=ADMIN).json()["status"] == "timedOut"
    late = client.post(f"/v1/tasks/{task['id']}/complete", json={"data": {"approved": True}}, headers=ANN)
    assert late.status_code in (404, 409)


def test_a_forged_completion_event_does_not_complete_the_task(client) -> None:
    instance_id = start(client)
    task = task_of(client, instance_id)
    forged = {"specversion": "1.0", "id": "forged-1", "source": "/me", "type": "io.xflow.usertask.completed",
              "xflowtaskkey": "approve-expense", "xflowtaskid": task["id"],
              "data": {"data": {"approved": True}, "completedBy": "bo"}}
    sent = client.post("/v1/events", json=forged, headers={**BO, "Content-Type": "application/cloudevents+json"})
    assert sent.status_code == 200 and sent.json()["delivered_to"] >= 1, sent.text
    history = eventually(lambda: [r for r in client.get(f"/v1/instances/{instance_id}/history", headers=ADMIN)
                                  .json().get("items", []) if r.get("event") == "task_event_ignored"])
    assert history and client.get(f"/v1/instances/{instance_id}", headers=ADMIN).json()["status"] == "running"
    client.delete(f"/v1/tasks/{task['id']}", headers=ADMIN)


def test_a_waiting_task_survives_a_restart_of_the_service(client, service) -> None:
    instance_id = start(client)
    task = task_of(client, instance_id)
    service.stop()
    service.start()
    response = client.post(f"/v1/tasks/{task['id']}/complete", json={"data": {"approved": True}}, headers=ANN)
    assert response.status_code == 200, response.text
    assert finished(client, instance_id)["output"]["status"] == "approved"


def test_the_cli_lists_claims_and_completes(client, service) -> None:
    import json
    import os
    import subprocess
    import sys

    from tests.human_states.support import ROOT

    instance_id = start(client)
    task = task_of(client, instance_id)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XFLOW_URL": service.url,
           "XFLOW_TOKEN": ANN["Authorization"].split()[1]}

    def xflow(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(ROOT / "bin" / "xflow"), "tasks", *args], capture_output=True,
                              text=True, timeout=60, env=env)

    listed = xflow("list")
    assert listed.returncode == 0 and task["id"] in listed.stdout and "approve-expense" in listed.stdout
    assert xflow("claim", task["id"]).returncode == 0
    refused = xflow("complete", task["id"], "--data", '{"approved": 1}')
    assert refused.returncode == 1 and "does not match the task's form" in refused.stderr
    assert "Traceback" not in refused.stderr
    done = xflow("complete", task["id"], "--data", '{"approved": true}')
    assert done.returncode == 0 and json.loads(done.stdout)["status"] == "completed"
    assert finished(client, instance_id)["output"]["status"] == "approved"
    assert xflow("show").returncode == 2


def test_a_crash_between_completing_and_waking_loses_nothing_and_wakes_once(client, service) -> None:
    """The completion and the wake-up are one recoverable operation: the process dies right after
    the task's row is completed, and the restarted service still wakes the instance, once."""
    instance_id = start(client)
    task = task_of(client, instance_id)
    service.stop()
    service.env["XFLOW_CRASH_AT"] = "usertask-between-write-and-wake"
    service.start()
    try:
        with pytest.raises(httpx.HTTPError):  # the process exits in the middle of the request
            client.post(f"/v1/tasks/{task['id']}/complete", json={"data": {"approved": True}}, headers=ANN)
        assert service.stop() == 86
    finally:
        service.env.pop("XFLOW_CRASH_AT")
        if service.process is None:
            service.start()
    assert finished(client, instance_id)["output"]["status"] == "approved"
    assert client.get(f"/v1/tasks/{task['id']}", headers=ADMIN).json()["status"] == "completed"
    again = client.post(f"/v1/tasks/{task['id']}/complete", json={"data": {"approved": False}}, headers=ANN)
    assert again.status_code == 409
    history = client.get(f"/v1/instances/{instance_id}/history", headers=ADMIN).json()["items"]
    assert [r["event"] for r in history].count("task_completed") == 1
    assert not [r for r in history if r.get("event") == "task_event_ignored"]
    # The recovered operation kept its records (they hold the form data): erasing the instance's
    # user deletes them too, found by the instance they are about.
    import sqlite3

    def operations() -> int:
        with sqlite3.connect(service.db_url.removeprefix("sqlite:///")) as store:
            return store.execute("SELECT count(*) FROM workflow_status WHERE workflow_uuid LIKE ?",
                                 (f"xflow-wake:{instance_id}:%",)).fetchone()[0]

    assert operations() >= 1
    erased = client.delete("/v1/users/bo", headers=ADMIN)
    assert erased.status_code == 200, erased.text
    assert operations() == 0
