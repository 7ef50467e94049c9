"""CloudEvents over HTTP: structured, binary and batch modes delivered by correlation, a
workflow started by its event, the event id as idempotency key, malformed events refused."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.service.support import assert_problem, bearer

pytestmark = pytest.mark.slow
STRUCTURED = "application/cloudevents+json"


def approval(order: str, event_id: str, ok: bool = True) -> dict:
    return {"specversion": "1.0", "id": event_id, "source": "/approvals", "type": "order.approval",
            "orderid": order, "data": {"ok": ok}}


def start(client: httpx.Client, key: str, order: str) -> str:
    response = client.post("/v1/workflows/approval/instances", json={"order": order},
                           params={"correlation.orderid": order}, headers=bearer(key))
    assert response.status_code == 201, response.text
    return response.json()["id"]


def wait_done(client: httpx.Client, key: str, instance_id: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        body = client.get(f"/v1/instances/{instance_id}", headers=bearer(key)).json()
        if body["status"] in ("completed", "failed") or time.monotonic() > deadline:
            return body
        time.sleep(0.1)


def test_the_three_modes_reach_only_the_correlated_instance(client, keys) -> None:
    ids = {order: start(client, keys["a"], order) for order in ("s-1", "b-1", "x-1", "x-2")}
    structured = client.post("/v1/events", content=json.dumps(approval("s-1", "e-s1")),
                             headers={**bearer(keys["a"]), "content-type": STRUCTURED + "; charset=utf-8",
                                      "ce-traceparent": "00-abc"})  # a stray ce- header keeps it structured
    assert structured.status_code == 200, structured.text
    assert structured.json()["delivered_to"] == 1
    binary = client.post("/v1/events", content=json.dumps({"ok": False}),
                         headers={**bearer(keys["a"]), "content-type": "application/json", "ce-specversion": "1.0",
                                  "ce-id": "e-b1", "ce-source": "/approvals", "ce-type": "order.approval",
                                  "ce-orderid": "b%2D1"})  # percent-encoded "b-1"
    assert binary.status_code == 200 and binary.json()["delivered_to"] == 1, binary.text
    batch = client.post("/v1/events", content=json.dumps([approval("x-1", "e-x1"), approval("x-2", "e-x2")]),
                        headers={**bearer(keys["a"]), "content-type": "application/cloudevents-batch+json"})
    assert batch.status_code == 200 and [r["delivered_to"] for r in batch.json()["results"]] == [1, 1]
    assert wait_done(client, keys["a"], ids["s-1"])["output"] == {"order": "s-1", "decision": {"ok": True}}
    assert wait_done(client, keys["a"], ids["b-1"])["output"] == {"order": "b-1", "decision": {"ok": False}}
    for order in ("x-1", "x-2"):
        assert wait_done(client, keys["a"], ids[order])["status"] == "completed"


def test_another_tenants_instance_never_receives_the_event(client, keys) -> None:
    theirs = start(client, keys["b"], "t-1")
    response = client.post("/v1/events", content=json.dumps(approval("t-1", "e-t1")),
                           headers={**bearer(keys["a"]), "content-type": STRUCTURED})
    assert response.json()["delivered_to"] == 0
    time.sleep(0.5)
    assert client.get(f"/v1/instances/{theirs}", headers=bearer(keys["b"])).json()["status"] == "running"


def test_an_event_starts_its_workflow_once_per_event_id(client, keys) -> None:
    signup = {"specversion": "1.0", "id": "sign-1", "source": "/accounts", "type": "user.signup",
              "data": {"account": {"name": "Ann"}}}
    headers = {**bearer(keys["a/ann"]), "content-type": STRUCTURED}
    first = client.post("/v1/events", content=json.dumps(signup), headers=headers).json()
    again = client.post("/v1/events", content=json.dumps(signup), headers=headers).json()
    assert len(first["started"]) == 1 and again["started"] == first["started"]
    done = wait_done(client, keys["a/ann"], first["started"][0])
    assert done["status"] == "completed" and done["output"] == {"account": {"account": {"name": "Ann"}}} and done["user"] == "ann"
    listed = client.get("/v1/instances", params={"workflow": "signup"}, headers=bearer(keys["a/ann"])).json()
    assert [i["id"] for i in listed["items"]] == first["started"]


def test_the_same_event_id_is_consumed_once(client, keys) -> None:
    instance_id = start(client, keys["a"], "d-1")
    headers = {**bearer(keys["a"]), "content-type": STRUCTURED}
    for _ in range(2):
        client.post("/v1/events", content=json.dumps(approval("d-1", "dup-1", ok=False)), headers=headers)
    assert wait_done(client, keys["a"], instance_id)["output"]["decision"] == {"ok": False}
    history = client.get(f"/v1/instances/{instance_id}/history", headers=bearer(keys["a"])).json()["items"]
    assert sum(1 for r in history if r["event"] == "workflow_completed") == 1


@pytest.mark.parametrize("content_type, body, headers, status", [
    (STRUCTURED, {"specversion": "1.0", "source": "/s", "type": "t"}, {}, 400),             # no id
    (STRUCTURED, {"specversion": "0.3", "id": "1", "source": "/s", "type": "t"}, {}, 400),  # old specversion
    (STRUCTURED, {"specversion": "1.0", "id": "1", "source": "/s", "type": "t", "Bad-Name": 1}, {}, 400),
    (STRUCTURED, {"specversion": "1.0", "id": "1", "source": "/s", "type": "t", "data": 1, "data_base64": "AA=="}, {}, 400),
    ("application/json", {"x": 1}, {}, 400),                                                # binary without ce-*
    ("application/json", {"x": 1}, {"ce-specversion": "1.0", "ce-source": "/s", "ce-type": "t"}, 400),  # no ce-id
    ("application/json", {"x": 1}, {"ce-specversion": "1.0", "ce-id": "1", "ce-source": "/s", "ce-type": "t",
                                    "ce-datacontenttype": "application/json"}, 400),
    ("application/json", {"x": 1}, {"ce-specversion": "1.0", "ce-id": "%C0%A0", "ce-source": "/s", "ce-type": "t"}, 400),
    ("application/cloudevents+avro", {"x": 1}, {}, 415),
    ("application/cloudevents-batch+json", {"not": "a list"}, {}, 400),
])
def test_invalid_events_are_problems(client, keys, content_type, body, headers, status) -> None:
    response = client.post("/v1/events", content=json.dumps(body),
                           headers={**bearer(keys["a"]), "content-type": content_type, **headers})
    assert_problem(response, status)


def test_a_bad_batch_item_names_its_index(client, keys) -> None:
    batch = [approval("z", "z-1"), {"specversion": "1.0", "id": "z-2", "type": "t"}]
    problem = assert_problem(client.post("/v1/events", content=json.dumps(batch), headers={
        **bearer(keys["a"]), "content-type": "application/cloudevents-batch+json"}), 400)
    assert problem["errors"][0]["pointer"] == "#/1/source"
    empty = client.post("/v1/events", content="[]", headers={**bearer(keys["a"]),
                                                             "content-type": "application/cloudevents-batch+json"})
    assert empty.status_code == 200 and empty.json() == {"results": []}


def test_an_instance_without_correlation_receives_every_event_its_owner_may_send(client, keys) -> None:
    """Pinned before event delivery went through an index: an instance started without correlation
    values receives every event of a credential that may see it (its tenant's service credential,
    its own user), not another user's; the correlated instances of the tenant still need their values."""
    uncorrelated = client.post("/v1/workflows/approval/instances", json={"order": "u-1"}, headers=bearer(keys["b/bea"]))
    assert uncorrelated.status_code == 201, uncorrelated.text
    correlated = start(client, keys["b"], "u-2")
    headers = {"content-type": STRUCTURED}
    # (each approval event also starts an approval instance correlated on its order: another order here)
    other_user = client.post("/v1/events", content=json.dumps(approval("zz-8", "u-e1")),
                             headers={**headers, **bearer(keys["b/bob"])}).json()
    assert other_user["delivered_to"] == 0
    service = client.post("/v1/events", content=json.dumps(approval("zz-9", "u-e2", ok=False)),
                          headers={**headers, **bearer(keys["b"])}).json()
    assert service["delivered_to"] == 1  # the uncorrelated one, not u-2 nor t-1 (another order)
    done = wait_done(client, keys["b/bea"], uncorrelated.json()["id"])
    assert done["output"] == {"order": "u-1", "decision": {"ok": False}}
    assert client.get(f"/v1/instances/{correlated}", headers=bearer(keys["b"])).json()["status"] == "running"
    finish = client.post("/v1/events", content=json.dumps(approval("u-2", "u-e3")),
                         headers={**headers, **bearer(keys["b"])}).json()
    assert finish["delivered_to"] == 1 and wait_done(client, keys["b"], correlated)["status"] == "completed"
