"""Consent, erasure and export over a real ``xflow serve`` (specs/service.md, "Memory and
privacy"): refused consent means the extraction model is never called (the scripted model
server's request log), an erasure over HTTP answers the receipt and leaves no trace in either
store (the scan of tests/privacy), an export holds the user's data and nobody else's."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
import pytest

from tests.privacy.conftest import OTHER_PHRASE, PHRASE, SCRIPT, WORKFLOW
from tests.privacy.scan import traces
from tests.service.support import assert_problem, bearer, jwt_token
from xflow_runtime.privacy.export import is_empty
from xflow_runtime.settings import locate
from xflow_runtime.testing import ScriptedModelServer

pytestmark = pytest.mark.slow
TENANT, AGENT = "acme", "concierge"
ERASED, KEPT, REFUSING = "u-erase-http-1", "u-keep-http-2", "u-refuse-http-3"
REFUSED_PHRASE = "wombatcardamom"


@pytest.fixture(scope="module")
def workflows_dir(service_dir: Path) -> Path:
    target = service_dir / "privacy-workflows"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    (target / "privacy-chat.yaml").write_text(WORKFLOW)
    return target


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(SCRIPT) as server:
        yield server


def as_user(user: str, tenant: str = TENANT) -> dict[str, str]:
    return bearer(jwt_token(tenant, user))


def start(client: httpx.Client, user: str, message: str) -> dict[str, Any]:
    answer = client.post("/v1/workflows/privacy-chat/instances", json={"message": message},
                         headers={**as_user(user), "Prefer": "wait=60"})
    assert answer.status_code == 201, answer.text
    return answer.json()


def eventually(condition: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError("not reached in time")


def extraction_texts(model_server: ScriptedModelServer) -> list[str]:
    return [json.dumps(r.body) for r in model_server.chat_requests if r.body.get("model", "").endswith("extractor")]


def facts_of(client: httpx.Client, user: str) -> list[dict[str, Any]]:
    return client.get(f"/v1/agents/{AGENT}/facts", headers=as_user(user)).json()["items"]


def test_refused_consent_means_the_extraction_model_is_never_called(client, model_server) -> None:
    assert client.get(f"/v1/users/{REFUSING}/consent", headers=as_user(REFUSING)).json() == {"consent": "unset"}
    put = client.put(f"/v1/users/{REFUSING}/consent", json={"consent": "refused"}, headers=as_user(REFUSING))
    assert put.status_code == 200 and put.json() == {"consent": "refused"}
    assert client.get(f"/v1/users/{REFUSING}/consent", headers=as_user(REFUSING)).json() == {"consent": "refused"}
    assert start(client, REFUSING, f"I like {REFUSED_PHRASE}")["status"] == "completed"
    # the same conversation by a user who never refused is extracted: the control
    assert start(client, KEPT, f"I like {OTHER_PHRASE}")["status"] == "completed"
    eventually(lambda: any(OTHER_PHRASE in text for text in extraction_texts(model_server)))
    eventually(lambda: len(facts_of(client, KEPT)) == 1)
    assert not any(REFUSED_PHRASE in text for text in extraction_texts(model_server))
    assert facts_of(client, REFUSING) == []
    exported = client.get(f"/v1/users/{REFUSING}/export", headers=as_user(REFUSING)).json()
    assert exported["memory"]["consent"] == "refused" and exported["memory"]["extraction_jobs"] == []
    service = bearer(jwt_token(TENANT, "ops", role="service"))
    assert client.put(f"/v1/users/{REFUSING}/consent", json={"consent": "allowed"}, headers=service).json() == \
        {"consent": "allowed"}
    # the same user id in another tenant is another person
    other_tenant = bearer(jwt_token("other", "ops", role="service"))
    assert client.get(f"/v1/users/{REFUSING}/consent", headers=other_tenant).json() == {"consent": "unset"}


def test_an_erasure_over_http_answers_the_receipt_and_leaves_no_trace(client, model_server, db_url) -> None:
    assert start(client, ERASED, f"please remember {PHRASE}")["status"] == "completed"
    waiting = start(client, ERASED, f"hold on, {PHRASE}")
    assert waiting["status"] == "waiting"
    if not facts_of(client, KEPT):
        start(client, KEPT, f"I like {OTHER_PHRASE}")
    eventually(lambda: len(facts_of(client, ERASED)) == 1 and len(facts_of(client, KEPT)) == 1)
    exported = client.get(f"/v1/users/{ERASED}/export", headers=as_user(ERASED)).json()
    assert PHRASE in json.dumps(exported) and OTHER_PHRASE not in json.dumps(exported)
    assert "location" not in exported["memory"] and "location" not in exported["durable"]
    assert {i["instance_id"] for i in exported["instances"]} >= {waiting["id"]}
    kept_before = client.get(f"/v1/users/{KEPT}/export", headers=as_user(KEPT)).json()

    assert_problem(client.delete(f"/v1/users/{ERASED}", headers=as_user(KEPT)), 404)
    elsewhere = client.delete(f"/v1/users/{ERASED}", headers=bearer(jwt_token("other", "ops", role="service"))).json()
    assert elsewhere["tenant"] == "other" and not any(  # the same id in another tenant: another person
        n for store in elsewhere["stores"].values() for n in store["deleted"].values())
    assert "location" not in json.dumps(elsewhere)  # where the stores are is not the caller's business
    receipt = client.delete(f"/v1/users/{ERASED}", headers=as_user(ERASED))
    assert receipt.status_code == 200, receipt.text
    body = receipt.json()
    assert body["tenant"] == TENANT and body["user"] == ERASED and body["cancelled_instances"] == [waiting["id"]]
    assert body["stores"]["memory"]["deleted"]["facts"] == 1 and body["stores"]["memory"]["deleted"]["memories"] == 1
    assert sum(body["stores"]["durable"]["deleted"].values()) > 0

    where = locate(db_url)
    found: dict[str, int] = {}
    for url in sorted({where.durable_url, where.memory_url}):
        found.update(traces(url, [PHRASE, ERASED]))
    assert found == {}
    assert is_empty(client.get(f"/v1/users/{ERASED}/export", headers=as_user(ERASED)).json())
    assert client.get("/v1/chats", headers=as_user(ERASED)).json()["items"] == []
    assert client.get(f"/v1/users/{KEPT}/export", headers=as_user(KEPT)).json() == kept_before
    again = client.delete(f"/v1/users/{ERASED}", headers=bearer(jwt_token(TENANT, "ops", role="service"))).json()
    assert again["cancelled_instances"] == [] and not any(
        n for store in again["stores"].values() for n in store["deleted"].values())


def test_an_erasure_a_reader_holds_back_is_a_503_problem_and_a_retry_finishes_it(client, db_url) -> None:
    from tests.privacy.test_wal_readers import Reader

    user = "u-erase-busy-4"
    assert start(client, user, f"please remember {PHRASE}")["status"] == "completed"
    memory_file = Path(locate(db_url).memory_url.removeprefix("sqlite:///"))
    reader = Reader([memory_file])  # another process reads the memory store past the erasure's wait
    try:
        answer = client.delete(f"/v1/users/{user}", headers=as_user(user), timeout=120)
        assert answer.status_code == 503, answer.text  # never a 500, never a receipt
        assert answer.headers["content-type"].startswith("application/problem+json")
        problem = answer.json()
        assert problem["type"] == "urn:xflow:problem:erasure-incomplete"
        assert "rows deleted" in problem["detail"] and "send the erasure again" in problem["detail"]
        assert str(memory_file.parent) not in answer.text  # where the store is: the operator's business
        assert int(answer.headers["Retry-After"]) > 0
    finally:
        if reader.process.poll() is None:
            reader.end()
        reader.kill()
    again = client.delete(f"/v1/users/{user}", headers=as_user(user))
    assert again.status_code == 200, again.text
    assert traces(locate(db_url).memory_url, [user]) == {}
