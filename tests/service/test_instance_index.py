"""Lists and event delivery read an index of the store, not every instance (specs/service.md,
"Lists", "Events"), through a real server on SQLite and on PostgreSQL: pages cover many instances
once each in (created_at, id) order; tenants and users see and reach only their own; an event
reaches only the instances whose correlation values it carries; the keyset pager agrees with a
Python model of the list for any filters and page size (hypothesis)."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.service.support import ServiceProcess, bearer, store_url

pytestmark = pytest.mark.slow
STRUCTURED = "application/cloudevents+json"
MANY = 150  # instances of tenant p, paged through


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, service_dir: Path) -> str:
    return store_url(request, service_dir, "xflow_list")


@pytest.fixture(scope="module")
def index_keys(db_url: str) -> dict[str, str]:
    """Service keys of tenants p, q, h; user keys of (p, pat), (p, pam), (h, hu1), (h, hu2)."""
    from xflow_runtime.runtime.memory import chat_memory_url
    from xflow_runtime.service.api_keys import ApiKeyStore

    store = ApiKeyStore(chat_memory_url(db_url))
    made = {tenant: store.create(tenant, role="service")[0] for tenant in ("p", "q", "h")}
    for tenant, user in (("p", "pat"), ("p", "pam"), ("h", "hu1"), ("h", "hu2")):
        made[f"{tenant}/{user}"] = store.create(tenant, user=user, role="user")[0]
    store.close()
    return made


@pytest.fixture(scope="module")
def service(workflows_dir: Path, db_url: str, index_keys: dict[str, str], service_dir: Path,
            model_server: Any) -> Iterator[ServiceProcess]:
    process = ServiceProcess(workflows_dir, db_url, llm_api_base=model_server.api_base, log_dir=service_dir).start()
    yield process
    process.stop()


def _start(client: httpx.Client, key: str, workflow: str, body: dict, **params: str) -> dict:
    headers = {**bearer(key), **({"Prefer": "wait=20"} if workflow == "greet" else {})}
    response = client.post(f"/v1/workflows/{workflow}/instances", json=body, params=params, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()


def _pages(client: httpx.Client, key: str, limit: int, **filters: str) -> list[list[dict]]:
    pages, cursor = [], None
    while True:
        params = {"limit": limit, **filters, **({"cursor": cursor} if cursor else {})}
        response = client.get("/v1/instances", params=params, headers=bearer(key))
        assert response.status_code == 200, response.text
        body = response.json()
        pages.append(body["items"])
        cursor = body["next_cursor"]
        if cursor is None:
            return pages
        assert len(pages) < 1000


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _order(item: dict) -> tuple[datetime, str]:
    return _moment(item["created_at"]), item["id"]


def _post_event(client: httpx.Client, key: str, event: dict) -> dict:
    response = client.post("/v1/events", content=json.dumps(event), headers={**bearer(key), "content-type": STRUCTURED})
    assert response.status_code == 200, response.text
    return response.json()


def _approval(order: str, event_id: str) -> dict:
    return {"specversion": "1.0", "id": event_id, "source": "/approvals", "type": "order.approval",
            "orderid": order, "data": {"ok": True}}


def _status(client: httpx.Client, key: str, instance_id: str) -> str:
    return client.get(f"/v1/instances/{instance_id}", headers=bearer(key)).json()["status"]


def _wait(client: httpx.Client, key: str, instance_id: str, status: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while _status(client, key, instance_id) != status:
        assert time.monotonic() < deadline, f"{instance_id} never became {status}"
        time.sleep(0.1)


def test_pages_cover_many_instances_once_each_newest_first(client, index_keys) -> None:
    keys = [index_keys["p"], index_keys["p/pat"], index_keys["p/pam"]]
    with ThreadPoolExecutor(4) as pool:
        started = list(pool.map(lambda i: _start(client, keys[i % 3], "greet", {"name": str(i)})["id"], range(MANY)))
    _start(client, index_keys["q"], "greet", {"name": "q"})  # another tenant's
    deadline = time.monotonic() + 120
    while _pages(client, index_keys["p"], 200, status="running") != [[]]:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    pages = _pages(client, index_keys["p"], 13, workflow="greet")
    assert all(len(page) == 13 for page in pages[:-1]) and 0 < len(pages[-1]) <= 13
    items = [item for page in pages for item in page]
    assert sorted(item["id"] for item in items) == sorted(started)  # no gap, no duplicate, nothing of q
    assert [_order(item) for item in items] == sorted((_order(item) for item in items), reverse=True)
    # a user sees its own, in the same order; a status filter of the engine's final status is exact
    pats = [item["id"] for page in _pages(client, index_keys["p/pat"], 7) for item in page]
    assert pats == [item["id"] for item in items if item["user"] == "pat"] and len(pats) == MANY // 3
    completed = [item["id"] for page in _pages(client, index_keys["p"], 50, status="completed") for item in page]
    assert completed == [item["id"] for item in items]
    assert _pages(client, index_keys["q"], 200, user="pat") == [[]]


def test_an_event_reaches_only_the_instances_correlated_with_it(client, index_keys) -> None:
    p, q = index_keys["p"], index_keys["q"]
    ours = {order: _start(client, p, "approval", {"order": order}, **{"correlation.orderid": order})["id"]
            for order in (f"c-{i}" for i in range(30))}
    theirs = _start(client, q, "approval", {"order": "c-7"}, **{"correlation.orderid": "c-7"})["id"]
    pats = _start(client, index_keys["p/pat"], "approval", {"order": "c-pat"}, **{"correlation.orderid": "c-pat"})["id"]
    # each approval event also starts an approval instance for its own order (not counted as delivered)
    assert _post_event(client, p, _approval("c-7", "ev-c-7"))["delivered_to"] == 1
    _wait(client, p, ours["c-7"], "completed")
    assert _status(client, q, theirs) == "running"
    assert all(_status(client, p, ours[o]) == "running" for o in ("c-6", "c-8", "c-17"))
    assert _post_event(client, index_keys["p/pam"], _approval("c-pat", "ev-pam"))["delivered_to"] == 0
    assert _status(client, p, pats) == "running"
    assert _post_event(client, index_keys["p/pat"], _approval("c-pat", "ev-pat"))["delivered_to"] == 1
    _wait(client, p, pats, "completed")
    assert _post_event(client, q, _approval("c-7", "ev-q-c-7"))["delivered_to"] == 1
    _wait(client, q, theirs, "completed")
    # an event without the attribute reaches no correlated instance (each of them stays running)
    bare = {key: value for key, value in _approval("c-1", "ev-bare").items() if key != "orderid"}
    _post_event(client, p, bare)
    assert _status(client, p, ours["c-1"]) == "running"


@pytest.fixture(scope="module")
def modelled(client: httpx.Client, index_keys: dict[str, str]) -> list[dict]:
    """The instances of tenant h, settled (greet completed, approvals waiting, some cancelled), as
    GET /v1/instances/{id} shows each: the model the pager is checked against."""
    h = index_keys["h"]
    owners = [h, index_keys["h/hu1"], index_keys["h/hu2"]]
    ids = [_start(client, owners[i % 3], "greet", {"name": str(i)})["id"] for i in range(18)]
    ids += [_start(client, owners[i % 3], "approval", {"order": f"h-{i}"}, **{"correlation.orderid": f"h-{i}"})["id"]
            for i in range(12)]
    for instance_id in ids[-4:]:
        assert client.post(f"/v1/instances/{instance_id}/cancel", headers=bearer(h)).status_code == 202
        _wait(client, h, instance_id, "cancelled")
    for instance_id in ids[:18]:
        _wait(client, h, instance_id, "completed")
    return [client.get(f"/v1/instances/{i}", headers=bearer(h)).json() for i in ids]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(limit=st.integers(1, 12), workflow=st.sampled_from([None, "greet", "approval"]),
       user=st.sampled_from([None, "hu1", "hu2", "nobody"]),
       status=st.sampled_from([None, "running", "completed", "cancelled", "failed"]),
       window=st.tuples(st.integers(-1, 31), st.integers(-1, 31)), caller=st.sampled_from(["h", "h/hu1"]))
def test_the_keyset_pager_agrees_with_a_model_of_the_list(client, index_keys, modelled, limit, workflow, user,
                                                          status, window, caller) -> None:
    ordered = sorted(modelled, key=_order, reverse=True)
    moments = sorted({_moment(item["created_at"]) for item in modelled})
    # half a millisecond off an instance's moment: well clear of how floats round either side
    after, before = (None if i < 0 else moments[min(i, len(moments) - 1)] + timedelta(microseconds=offset)
                     for i, offset in zip(window, (-500, 500)))
    owner = "hu1" if caller == "h/hu1" else user
    expected = [item["id"] for item in ordered
                if (workflow is None or item["workflow"] == workflow) and (owner is None or item["user"] == owner)
                and (status is None or item["status"] == status)
                and (after is None or _moment(item["created_at"]) >= after)
                and (before is None or _moment(item["created_at"]) < before)]
    filters = {k: v for k, v in {"workflow": workflow, "user": user, "status": status,
                                 "started_after": after and after.isoformat(),
                                 "started_before": before and before.isoformat()}.items() if v is not None}
    pages = _pages(client, index_keys[caller], limit, **filters)
    assert [item["id"] for page in pages for item in page] == expected
    assert all(len(page) == limit for page in pages[:-1]) and len(pages[-1]) <= limit


def test_the_status_filter_keeps_the_status_each_instance_shows(client, index_keys) -> None:
    """``waiting`` comes from the hub's latest record (an agent reply) over an engine status of
    running: the filter asks the database for a superset and keeps what the wire shows."""
    pat = index_keys["p/pat"]
    chat = client.post("/v1/workflows/chat/instances", json={"message": "hello"}, headers={**bearer(pat), "Prefer": "wait=60"})
    assert chat.status_code == 201 and chat.json()["status"] == "waiting", chat.text
    chat_id = chat.json()["id"]
    waiting_approval = _start(client, pat, "approval", {"order": "s-1"}, **{"correlation.orderid": "s-1"})["id"]

    def listed(status: str) -> list[str]:
        return [item["id"] for page in _pages(client, pat, 3, status=status) for item in page]

    assert chat_id in listed("waiting") and waiting_approval not in listed("waiting")
    assert waiting_approval in listed("running") and chat_id not in listed("running")
    done = client.post(f"/v1/instances/{chat_id}/messages", json={"text": "bye"}, headers=bearer(pat))
    assert done.status_code == 200 and done.json()["status"] == "completed", done.text
    assert chat_id in listed("completed") and chat_id not in listed("waiting") + listed("running")
    everything = [item["id"] for page in _pages(client, pat, 200) for item in page]
    shown = {i: _status(client, pat, i) for i in everything}
    for status in ("running", "waiting", "completed", "cancelled", "failed"):
        assert listed(status) == [i for i in everything if shown[i] == status], status
