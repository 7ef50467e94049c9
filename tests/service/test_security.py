"""Security over HTTP: credentials (API keys, JWTs) refused when missing, wrong, expired or
revoked; tenant isolation under random operations by two tenants × two end users; 100+
malformed requests answered with 4xx problem documents, never a 5xx, and nothing lost."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.service.support import JWT_SECRET, assert_problem, bearer, jwt_token

pytestmark = pytest.mark.slow
USERS = [("a", "ann"), ("a", "al"), ("b", "bob"), ("b", "bea")]


def test_missing_and_wrong_credentials_are_401_with_a_bearer_challenge(client, keys) -> None:
    missing = client.get("/v1/instances")
    assert_problem(missing, 401)
    assert missing.headers["www-authenticate"] == 'Bearer realm="xflow"'
    for headers in ({"Authorization": "Bearer xfk_0000000000000000_nope"}, {"Authorization": "Basic abc"},
                    {"X-API-Key": keys["a"][:-2] + "xx"}, bearer("a.b.c")):
        response = client.get("/v1/instances", headers=headers)
        assert_problem(response, 401)
        assert 'error="invalid_token"' in response.headers["www-authenticate"]
    assert client.get("/v1/instances", headers={"X-API-Key": keys["a"]}).status_code == 200


def test_jwts_are_checked(client) -> None:
    import jwt

    assert client.get("/v1/instances", headers=bearer(jwt_token("a", "ann"))).status_code == 200
    now = int(time.time())
    forged = [
        jwt_token("a", "ann", expires_in=-120),                                        # expired
        jwt.encode({"sub": "ann", "tenant": "a", "exp": now + 60}, "another-secret-of-at-least-32-bytes!!", "HS256"),
        jwt.encode({"sub": "ann", "tenant": "a", "exp": now + 60}, None, "none"),      # alg none
        jwt.encode({"sub": "ann", "tenant": "a"}, JWT_SECRET, "HS256"),                # no exp
        jwt_token("a", "ann", role="admin"),                                           # unknown role
        jwt.encode({"sub": "ann", "exp": now + 60}, JWT_SECRET, "HS256"),              # no tenant
        jwt_token("a", "ann", nbf=now + 3600),                                         # not yet valid
    ]
    for token in forged:
        assert_problem(client.get("/v1/instances", headers=bearer(token)), 401)


def test_revoked_and_expired_keys_are_refused(client, db_url) -> None:
    from xflow_runtime.runtime.memory import chat_memory_url
    from xflow_runtime.service.api_keys import ApiKeyStore
    from datetime import timedelta

    store = ApiKeyStore(chat_memory_url(db_url))
    try:
        key, info = store.create("a", role="service", name="temporary")
        short, _ = store.create("a", role="service", expires_in=timedelta(seconds=1))
        assert client.get("/v1/instances", headers=bearer(key)).status_code == 200
        assert client.get("/v1/instances", headers=bearer(short)).status_code == 200
        assert store.revoke(info.id)
        time.sleep(1.1)
        assert_problem(client.get("/v1/instances", headers=bearer(key)), 401)
        assert_problem(client.get("/v1/instances", headers=bearer(short)), 401)
        # stored hashed: the secret is nowhere in the table
        with store.engine.connect() as connection:
            rows = connection.exec_driver_sql("SELECT * FROM xflow_api_keys").fetchall()
        secret = key.split("_", 2)[2]  # xfk_<id>_<secret>: the secret itself may hold "_"
        assert secret not in json.dumps([list(map(str, r)) for r in rows])
    finally:
        store.close()


def test_tenant_and_user_come_from_the_credential_not_the_body(client, keys) -> None:
    forged = {"name": "x", "tenant": "b", "user": "bob", "tenant_id": "b"}
    started = client.post("/v1/workflows/greet/instances", json=forged, headers=bearer(keys["a/ann"])).json()
    assert started["user"] == "ann"
    assert_problem(client.get(f"/v1/instances/{started['id']}", headers=bearer(keys["b/bob"])), 404)
    assert client.get(f"/v1/instances/{started['id']}", headers=bearer(keys["a"])).status_code == 200


OPERATIONS = st.lists(st.tuples(st.sampled_from(["start", "get", "history", "cancel", "message", "stream", "list"]),
                                st.integers(0, 3), st.integers(0, 50)), min_size=1, max_size=6)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(operations=OPERATIONS)
def test_random_operations_never_cross_tenants_or_users(client, keys, operations) -> None:
    owners: dict[str, tuple[str, str]] = getattr(test_random_operations_never_cross_tenants_or_users, "owners", {})
    test_random_operations_never_cross_tenants_or_users.owners = owners  # type: ignore[attr-defined]
    for operation, actor, pick in operations:
        tenant, user = USERS[actor]
        key = keys[f"{tenant}/{user}"]
        if operation == "start" or not owners:
            response = client.post("/v1/workflows/approval/instances", json={"order": "iso"},
                                   params={"correlation.orderid": "iso"}, headers=bearer(key))
            assert response.status_code == 201
            owners[response.json()["id"]] = (tenant, user)
            continue
        if operation == "list":
            listed = client.get("/v1/instances", params={"limit": 200}, headers=bearer(key)).json()["items"]
            assert all(owners.get(item["id"], (tenant, user)) == (tenant, user) for item in listed)
            assert all(item["user"] == user for item in listed)
            continue
        instance_id = sorted(owners)[pick % len(owners)]
        own = owners[instance_id] == (tenant, user)
        service_key = keys[owners[instance_id][0]]
        before = client.get(f"/v1/instances/{instance_id}", headers=bearer(service_key)).json()["status"]
        if operation == "get":
            response = client.get(f"/v1/instances/{instance_id}", headers=bearer(key))
        elif operation == "history":
            response = client.get(f"/v1/instances/{instance_id}/history", headers=bearer(key))
        elif operation == "cancel":
            response = client.post(f"/v1/instances/{instance_id}/cancel", headers=bearer(key))
        elif operation == "message":
            response = client.post(f"/v1/instances/{instance_id}/messages", json={"text": "hi"}, headers=bearer(key))
        else:
            with client.stream("GET", f"/v1/instances/{instance_id}/stream", headers=bearer(key)) as response:
                if response.status_code == 200:
                    first = next(response.iter_lines())  # the stream opened; the instance still waits
                    assert first.startswith("retry:")
                else:
                    response.read()
        if own:
            assert response.status_code in (200, 202, 204, 409), response.text
        else:
            assert_problem(response, 404)
            after = client.get(f"/v1/instances/{instance_id}", headers=bearer(service_key)).json()["status"]
            assert after == before  # a foreign caller changed nothing
        # the other tenant's service key never sees it either
        other_service = keys["b" if owners[instance_id][0] == "a" else "a"]
        assert_problem(client.get(f"/v1/instances/{instance_id}", headers=bearer(other_service)), 404)


def malformed_requests(keys: dict[str, str]) -> list[tuple[str, str, dict, bytes | None]]:
    auth = bearer(keys["a"])
    json_headers = {**auth, "content-type": "application/json"}
    bodies = [b"{", b"{\"a\": NaN}", b"{\"a\": Infinity}", b"[-Infinity]", b"\xff\xfe", b"{\"a\": 1, \"a\": 2}",
              b"", b"nul", b"{\"a\": tru}", b"\"unterminated", b"{}}", b"[" * 5000 + b"]" * 5000]
    requests: list[tuple[str, str, dict, bytes | None]] = []
    for body in bodies:
        requests.append(("POST", "/v1/workflows/greet/instances", json_headers, body if body else b"{"))
        requests.append(("POST", "/v1/instances/unknown-id/messages", json_headers, body))
        requests.append(("POST", "/v1/events", {**auth, "content-type": "application/cloudevents+json"}, body or b"{"))
    for content_type in ("text/plain", "application/xml", "multipart/form-data", "application/x-www-form-urlencoded", ""):
        requests.append(("POST", "/v1/workflows/greet/instances", {**auth, "content-type": content_type}, b"{\"name\": \"x\"}"))
    for body in (b"{\"text\": 5}", b"{\"text\": \"\"}", b"{\"text\": \"hi\", \"tenant\": \"b\"}", b"[]", b"\"hi\""):
        requests.append(("POST", "/v1/instances/unknown-id/messages", json_headers, body))
    huge = b"{\"name\": \"" + b"x" * 1_100_000 + b"\"}"
    requests += [("POST", "/v1/workflows/greet/instances", json_headers, huge), ("POST", "/v1/events",
                 {**auth, "content-type": "application/cloudevents+json"}, huge)]
    for path in ("/v1/instances/nope", "/v1/instances/nope/history", "/v1/workflows/nope", "/v1/nothing", "/v2/instances",
                 "/v1/instances/" + "x" * 300, "/v1/instances/%00", "/v1/workflows/nope/instances/extra"):
        requests.append(("GET", path, auth, None))
    for method, path in (("DELETE", "/v1/instances"), ("PUT", "/v1/events"), ("PATCH", "/v1/workflows"),
                         ("GET", "/v1/events"), ("DELETE", "/healthz"), ("POST", "/v1/instances/x/history")):
        requests.append((method, path, auth, None))
    for params in ("limit=0", "limit=10000", "limit=x", "cursor=%%%", "cursor=eyJ9", "status=odd", "limit=-1",
                   "workflow=" + "w" * 300):
        requests.append(("GET", "/v1/instances?" + params, auth, None))
    for key in ("", "a b", "\"\"", "k" * 300, "caf\u00e9"):
        requests.append(("POST", "/v1/workflows/greet/instances", {**json_headers, "Idempotency-Key": key.encode("utf-8")},
                         b"{\"name\": \"x\"}"))
    for value in ("", "wait=abc"):
        requests.append(("POST", "/v1/workflows/greet/instances?correlation.BAD=1", {**json_headers, "Prefer": value}, b"{\"name\": \"x\"}"))
    requests.append(("POST", "/v1/workflows/greet/instances", {**json_headers}, b"{\"name\": 1}"))
    requests.append(("POST", "/v1/workflows/greet/instances", {**json_headers}, b"[1, 2]"))
    requests.append(("POST", "/v1/events", {**auth, "content-type": "application/cloudevents-batch+json"},
                     json.dumps([{"specversion": "1.0", "id": str(i), "source": "/s", "type": "t"} for i in range(101)]).encode()))
    for instance_id in ("nope", "f" * 250, "00000000-0000-0000-0000-000000000000"):
        for action in ("cancel", "resume"):
            requests.append(("POST", f"/v1/instances/{instance_id}/{action}", auth, None))
        for action in ("history", "stream"):
            requests.append(("GET", f"/v1/instances/{instance_id}/{action}", auth, None))
        requests.append(("POST", f"/v1/instances/{instance_id}/messages", json_headers, b"{\"text\": \"hi\"}"))
    binary = {**auth, "content-type": "application/json", "ce-specversion": "1.0", "ce-source": "/s", "ce-type": "t"}
    for extra in ({"ce-id": ""}, {"ce-id": "1", "ce-specversion": "2.0"}, {"ce-id": "%FF"}, {"ce-id": "1", "ce-type": ""},
                  {"ce-id": "1", "ce-tenant": "b", "ce-source": ""}):
        requests.append(("POST", "/v1/events", {**binary, **extra}, b"{}"))
    for body in (b"[{\"specversion\": \"1.0\", \"id\": \"1\", \"source\": \"/s\", \"type\": \"t\", \"data\": NaN}]", b"[1]", b"[[]]"):
        requests.append(("POST", "/v1/events", {**auth, "content-type": "application/cloudevents-batch+json"}, body))
    requests.append(("GET", "/v1/instances", {"Authorization": "Bearer"}, None))
    requests.append(("GET", "/v1/instances", {"Authorization": "Bearer " + "x" * 5000}, None))
    return requests


def test_malformed_requests_are_problems_never_500s(client, keys) -> None:
    before = client.get("/v1/instances", params={"limit": 200}, headers=bearer(keys["a"])).json()["items"]
    requests = malformed_requests(keys)
    assert len(requests) >= 100
    for method, path, headers, body in requests:
        response = client.request(method, path, headers=headers, content=body)
        assert 400 <= response.status_code < 500, (method, path[:80], body[:80] if body else None, response.text[:300])
        assert_problem(response)
    after = client.get("/v1/instances", params={"limit": 200}, headers=bearer(keys["a"])).json()["items"]
    assert [i["id"] for i in after] == [i["id"] for i in before]  # nothing started, nothing lost
    assert client.get("/healthz").status_code == 200
