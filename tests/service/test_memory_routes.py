"""Chats, agent memories and facts over a real ``xflow serve`` (specs/service.md, "Memory and
privacy"): the 409 rules, keyset pages that neither skip nor repeat rows while rows are inserted,
an end-user credential that never sees nor changes another user's chats, memories or facts
(property test over random operations by two tenants × two users), malformed bodies and ids."""

from __future__ import annotations

import shutil
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.service.support import assert_problem, bearer, jwt_token
from xflow_runtime.testing import ScriptedModelServer

pytestmark = pytest.mark.slow
USERS = [("a", "ann"), ("a", "al"), ("b", "bob"), ("b", "bea")]
AGENT = "keeper"
WORKFLOW = f"""
id: keeper
specVersion: '0.8'
start: talk
states:
  - name: talk
    type: aiagent
    agentName: {AGENT}
    userMessage: '${{ .message }}'
    memory: {{scope: user, maxMessages: 20}}
    longTermMemory: {{enabled: true}}
    output: {{schema: {{type: object, properties: {{response: {{type: string}}}}, required: [response]}}}}
    end: true
"""
SCRIPT = {"rules": [], "default": {"json": {"response": "Noted."}}}


@pytest.fixture(scope="module")
def workflows_dir(service_dir: Path) -> Path:
    target = service_dir / "memory-workflows"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    (target / "keeper.yaml").write_text(WORKFLOW)
    return target


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(SCRIPT) as server:
        yield server


def key_of(keys: dict[str, str], tenant: str, user: str) -> dict[str, str]:
    return bearer(keys[f"{tenant}/{user}"])


@pytest.fixture(scope="module")
def chats(client, keys) -> dict[tuple[str, str], str]:
    """One finished agent conversation per user: (tenant, user) → its chat id."""
    found = {}
    for tenant, user in USERS:
        started = client.post("/v1/workflows/keeper/instances", json={"message": f"hello from {user}"},
                              headers={**key_of(keys, tenant, user), "Prefer": "wait=60"})
        assert started.status_code == 201 and started.json()["status"] == "completed", started.text
        listed = client.get("/v1/chats", headers=key_of(keys, tenant, user)).json()["items"]
        assert [chat["user"] for chat in listed] == [user]
        found[(tenant, user)] = listed[0]["id"]
    return found


def memories_url(user: str | None = None) -> str:
    return f"/v1/agents/{AGENT}/memories" + (f"?user={user}" if user else "")


def test_a_chat_is_listed_read_and_deleted_by_its_user(client, keys, chats) -> None:
    ann = key_of(keys, "a", "ann")
    chat = client.get(f"/v1/chats/{chats[('a', 'ann')]}", headers=ann).json()
    assert [m["role"] for m in chat["messages"]] == ["user", "assistant"]
    assert chat["messages"][0]["content"] == "hello from ann" and chat["agent"] == AGENT
    service_view = client.get("/v1/chats?user=ann", headers=bearer(keys["a"])).json()["items"]
    assert [c["id"] for c in service_view] == [chats[("a", "ann")]]
    assert {c["user"] for c in client.get("/v1/chats", headers=bearer(keys["a"])).json()["items"]} >= {"ann", "al"}
    cleo = bearer(jwt_token("a", "cleo"))
    for text in ("first", "second"):  # user scope: both runs continue the user's one chat
        assert client.post("/v1/workflows/keeper/instances", json={"message": text},
                           headers={**cleo, "Prefer": "wait=60"}).json()["status"] == "completed"
    [own] = client.get("/v1/chats", headers=cleo).json()["items"]
    assert own["message_count"] == 4
    assert_problem(client.delete(f"/v1/chats/{own['id']}", headers=ann), 404)
    deleted = client.delete(f"/v1/chats/{own['id']}", headers=cleo)
    assert deleted.status_code == 200 and deleted.json()["deleted_messages"] == 4
    assert_problem(client.get(f"/v1/chats/{own['id']}", headers=cleo), 404)
    assert client.delete("/v1/chats?memory_id=nothing-stored-here", headers=ann).json()["deleted_messages"] == 0


def test_a_duplicate_title_is_409_on_create_and_on_update(client, keys) -> None:
    al = key_of(keys, "a", "al")
    first = client.post(memories_url(), json={"title": "Parking", "content": "Level 3"}, headers=al)
    assert first.status_code == 201 and first.headers["location"].endswith(first.json()["id"])
    again = client.post(memories_url(), json={"title": "  Parking ", "content": "Level 4"}, headers=al)
    assert_problem(again, 409)["type"] == "urn:xflow:problem:memory-title-taken"
    # the same title for another user of the tenant, or the agent's own memories, is another scope
    assert client.post(memories_url(), json={"title": "Parking", "content": "B2"},
                       headers=key_of(keys, "a", "ann")).status_code == 201
    assert client.post(memories_url(), json={"title": "Parking", "content": "B2"},
                       headers=bearer(keys["a"])).status_code == 201
    other = client.post(memories_url(), json={"title": "Gym", "content": "Tuesdays"}, headers=al).json()
    clash = client.patch(f"{memories_url()}/{other['id']}", json={"title": "parking"}, headers=al)
    assert_problem(clash, 409)
    assert client.get(f"{memories_url()}/{other['id']}", headers=al).json()["title"] == "Gym"
    renamed = client.patch(f"{memories_url()}/{other['id']}", json={"title": "Swimming", "tags": ["sport"]},
                           headers=al)
    assert renamed.status_code == 200 and renamed.json()["title"] == "Swimming" and renamed.json()["tags"] == ["sport"]
    assert client.delete(f"{memories_url()}/{first.json()['id']}", headers=al).status_code == 204
    assert client.post(memories_url(), json={"title": "Parking", "content": "Level 5"}, headers=al).status_code == 201


def test_search_is_the_memory_search_tool_and_its_limit_is_50(client, keys) -> None:
    bob = key_of(keys, "b", "bob")
    for n in range(3):
        client.post(memories_url(), json={"title": f"Bike {n}", "content": f"bicycle lock {n}"}, headers=bob)
    found = client.post(f"{memories_url()}/search", json={"query": "bicycle", "limit": 2}, headers=bob)
    assert found.status_code == 200
    results = found.json()["results"]
    assert len(results) == 2 and all("bicycle" in r["text"] and r["kind"] == "memory" for r in results)
    assert_problem(client.post(f"{memories_url()}/search", json={"query": "bicycle", "limit": 51}, headers=bob), 422)
    by_keyword = client.get(f"{memories_url()}?q=bicycle", headers=bob).json()
    assert len(by_keyword["items"]) == 3 and by_keyword["next_cursor"] is None


def test_pages_neither_skip_nor_repeat_rows_while_rows_are_inserted(client, keys) -> None:
    service, user = bearer(keys["b"]), f"pager-{uuid.uuid4().hex[:6]}"
    before = set()
    for n in range(25):
        before.add(client.post(memories_url(user), json={"title": f"before {n}", "content": "x"},
                               headers=service).json()["id"])
    inserted: list[str] = []
    stop = threading.Event()

    def insert() -> None:
        with httpx.Client(base_url=str(client.base_url), timeout=60) as other:
            n = 0
            while not stop.is_set():
                answer = other.post(memories_url(user), json={"title": f"during {n}", "content": "y"}, headers=service)
                inserted.append(answer.json()["id"])
                n += 1

    writer = threading.Thread(target=insert)
    writer.start()
    try:
        seen: list[str] = []
        cursor = None
        while True:
            url = memories_url(user) + "&limit=4" + (f"&cursor={cursor}" if cursor else "")
            page = client.get(url, headers=service).json()
            seen += [item["id"] for item in page["items"]]
            cursor = page["next_cursor"]
            pages = len(seen) // 4
            for _ in range(400):  # let the writer insert at least one row between two pages
                if len(inserted) >= pages:
                    break
                time.sleep(0.025)
            if cursor is None:
                break
    finally:
        stop.set()
        writer.join()
    assert len(inserted) >= 6, "rows were inserted while paging"
    assert len(seen) == len(set(seen)), "a row was shown twice"
    assert before <= set(seen), "a row was skipped"
    assert_problem(client.get(memories_url(user) + "&cursor=" + "x" * 20, headers=service), 400)
    other_list = client.get(memories_url("someone-else") + "&limit=4", headers=service).json()
    assert other_list["next_cursor"] is None  # and a cursor of one list is refused by another:
    first = client.get(memories_url(user) + "&limit=4", headers=service).json()["next_cursor"]
    assert_problem(client.get(memories_url("someone-else") + f"&cursor={first}", headers=service), 400)


def test_chat_pages_neither_skip_nor_repeat_while_conversations_start(client, keys, chats) -> None:
    service = bearer(keys["b"])
    before = {c["id"] for c in client.get("/v1/chats?limit=200", headers=service).json()["items"]}
    assert len(before) >= 2
    started: list[str] = []
    stop = threading.Event()

    def converse() -> None:
        with httpx.Client(base_url=str(client.base_url), timeout=60) as other:
            while not stop.is_set():
                user = f"walk-in-{uuid.uuid4().hex[:6]}"
                other.post("/v1/workflows/keeper/instances", json={"message": "hi"},
                           headers={**bearer(jwt_token("b", user)), "Prefer": "wait=60"})
                started.append(user)

    writer = threading.Thread(target=converse)
    writer.start()
    try:
        seen: list[str] = []
        cursor = None
        while True:
            page = client.get("/v1/chats?limit=1" + (f"&cursor={cursor}" if cursor else ""), headers=service).json()
            seen += [c["id"] for c in page["items"]]
            cursor = page["next_cursor"]
            for _ in range(400):  # a conversation starts between two pages
                if len(started) >= len(seen):
                    break
                time.sleep(0.025)
            if cursor is None:
                break
    finally:
        stop.set()
        writer.join()
    assert len(started) >= 2
    assert len(seen) == len(set(seen)) and before <= set(seen)


def test_facts_are_per_end_user_and_added_by_a_service_credential(client, keys) -> None:
    service, bea = bearer(keys["b"]), key_of(keys, "b", "bea")
    added = client.post(f"/v1/agents/{AGENT}/facts?user=bea", json={"facts": [
        {"content": "Bea is vegetarian", "category": "preference", "importance": 7}]}, headers=service)
    assert added.status_code == 200 and added.json() == {"written": 1}
    assert_problem(client.post(f"/v1/agents/{AGENT}/facts", json={"facts": [{"content": "x"}]}, headers=bea), 403)
    assert_problem(client.get(f"/v1/agents/{AGENT}/facts", headers=service), 422)  # which user?
    facts = client.get(f"/v1/agents/{AGENT}/facts", headers=bea).json()["items"]
    assert [f["content"] for f in facts] == ["Bea is vegetarian"] and facts[0]["category"] == "preference"
    assert_problem(client.get(f"{memories_url()}/{facts[0]['id']}", headers=bea), 404)  # a fact is not a memory
    assert client.delete(f"/v1/agents/{AGENT}/facts/{facts[0]['id']}", headers=bea).status_code == 204
    assert client.get(f"/v1/agents/{AGENT}/facts", headers=bea).json()["items"] == []


# --- isolation -----------------------------------------------------------------------------------
OPERATIONS = ("create", "list", "get", "update", "delete", "search", "facts", "delete_fact", "chat", "delete_chat",
              "chats", "consent")


class World:
    """What exists (by owner) and what each owner's resources hold, to check nothing else changed."""

    def __init__(self, chats: dict[tuple[str, str], str]) -> None:
        self.memories: dict[str, tuple[tuple[str, str], str]] = {}  # id → (owner, content)
        self.facts: dict[str, tuple[str, str]] = {}
        self.chats = {chat_id: owner for owner, chat_id in chats.items()}

    def owned_by(self, owner: tuple[str, str], kind: str) -> list[str]:
        table: dict[str, Any] = {"memory": self.memories, "fact": self.facts, "chat": self.chats}[kind]
        return [i for i, value in table.items() if (value[0] if kind == "memory" else value) == owner]


@pytest.fixture(scope="module")
def world(chats, client, keys) -> World:
    world = World(chats)
    for tenant, user in USERS:
        client.post(f"/v1/agents/{AGENT}/facts?user={user}", json={"facts": [{"content": f"{user} fact {tenant}"}]},
                    headers=bearer(keys[tenant]))
        for fact in client.get(f"/v1/agents/{AGENT}/facts", headers=key_of(keys, tenant, user)).json()["items"]:
            world.facts[fact["id"]] = (tenant, user)
        for memory in client.get(memories_url() + "?limit=200", headers=key_of(keys, tenant, user)).json()["items"]:
            world.memories[memory["id"]] = ((tenant, user), memory["content"])
    return world


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None,
          phases=[Phase.generate])  # each step is HTTP round trips: no shrinking
@given(steps=st.lists(st.tuples(st.sampled_from(OPERATIONS), st.integers(0, 3), st.integers(0, 3)),
                      min_size=4, max_size=12))
def test_an_end_user_never_sees_or_changes_another_users_memory(client, keys, world, steps) -> None:
    for operation, actor_index, target_index in steps:
        actor, target = USERS[actor_index], USERS[target_index]
        headers = key_of(keys, *actor)
        mine = actor == target
        if operation == "create":
            title = f"t-{uuid.uuid4().hex[:8]}"
            made = client.post(memories_url(), json={"title": title, "content": "c"}, headers=headers)
            assert made.status_code == 201
            world.memories[made.json()["id"]] = (actor, "c")
        elif operation in ("list", "search"):
            if operation == "list":
                items = client.get(memories_url() + "?limit=200", headers=headers).json()["items"]
            else:
                items = client.post(f"{memories_url()}/search", json={"query": "c t", "limit": 50},
                                    headers=headers).json()["results"]
            assert {i["id"] for i in items} <= set(world.owned_by(actor, "memory")) | set(world.owned_by(actor, "fact"))
        elif operation in ("get", "update", "delete"):
            for memory_id in world.owned_by(target, "memory")[:2]:
                url = f"{memories_url()}/{memory_id}"
                answer = {"get": client.get, "delete": client.delete}.get(operation, lambda u, headers: client.patch(
                    u, json={"content": "changed by " + actor[1]}, headers=headers))(url, headers=headers)
                if mine:
                    assert answer.status_code < 300
                    if operation == "delete":
                        del world.memories[memory_id]
                    elif operation == "update":
                        world.memories[memory_id] = (actor, "changed by " + actor[1])
                else:
                    assert_problem(answer, 404)
                    owner_view = client.get(url, headers=key_of(keys, *target)).json()
                    assert owner_view["content"] == world.memories[memory_id][1]
        elif operation == "facts":
            answer = client.get(f"/v1/agents/{AGENT}/facts?user={target[1]}", headers=headers)
            if mine:
                assert {f["id"] for f in answer.json()["items"]} == set(world.owned_by(target, "fact"))
            else:
                assert_problem(answer, 404)
        elif operation == "delete_fact" and not mine:
            for fact_id in world.owned_by(target, "fact"):
                assert_problem(client.delete(f"/v1/agents/{AGENT}/facts/{fact_id}", headers=headers), 404)
                assert_problem(client.delete(f"/v1/agents/{AGENT}/facts/{fact_id}?user={target[1]}",
                                             headers=headers), 404)
        elif operation in ("chat", "delete_chat") and not mine:
            for chat_id in world.owned_by(target, "chat"):
                call = client.get if operation == "chat" else client.delete
                assert_problem(call(f"/v1/chats/{chat_id}", headers=headers), 404)
                assert client.get(f"/v1/chats/{chat_id}", headers=key_of(keys, *target)).status_code == 200
        elif operation == "chats":
            listed = client.get(f"/v1/chats?user={target[1]}", headers=headers)
            if mine:
                assert {c["id"] for c in listed.json()["items"]} >= set(world.owned_by(actor, "chat"))
            else:
                assert_problem(listed, 404)
        elif operation == "consent" and not mine:
            assert_problem(client.put(f"/v1/users/{target[1]}/consent", json={"consent": "refused"},
                                      headers=headers), 404)
            assert_problem(client.get(f"/v1/users/{target[1]}/export", headers=headers), 404)
            assert_problem(client.delete(f"/v1/users/{target[1]}", headers=headers), 404)
    # another tenant's service credential sees none of it either
    for (tenant, user), other_service in (((("a", "ann")), keys["b"]), ((("b", "bob")), keys["a"])):
        for memory_id in world.owned_by((tenant, user), "memory")[:3]:
            assert_problem(client.get(f"{memories_url()}/{memory_id}?user={user}", headers=bearer(other_service)), 404)
        for chat_id in world.owned_by((tenant, user), "chat"):
            assert_problem(client.get(f"/v1/chats/{chat_id}", headers=bearer(other_service)), 404)


# --- malformed requests --------------------------------------------------------------------------
MALFORMED: list[tuple[str, str, Any, dict[str, str]]] = [
    ("POST", memories_url(), b"{not json", {"content-type": "application/json"}),
    ("POST", memories_url(), b'{"title": "a", "title": "b", "content": "c"}', {"content-type": "application/json"}),
    ("POST", memories_url(), b'{"title": "a", "content": NaN}', {"content-type": "application/json"}),
    ("POST", memories_url(), b'{"title": "a", "content": "c"}', {"content-type": "text/plain"}),
    ("POST", memories_url(), {"title": "", "content": "c"}, {}),
    ("POST", memories_url(), {"title": "a" * 201, "content": "c"}, {}),
    ("POST", memories_url(), {"title": "a", "content": "c", "tenant": "b"}, {}),
    ("POST", memories_url(), {"title": "a", "content": "c", "tags": "x"}, {}),
    ("POST", memories_url(), [1, 2], {}),
    ("PATCH", f"{memories_url()}/nope", {"title": "x"}, {}),
    ("PATCH", f"{memories_url()}/{'x' * 300}", {"title": "x"}, {}),
    ("GET", f"{memories_url()}/%00", None, {}),
    ("GET", f"/v1/agents/{'a' * 300}/memories", None, {}),
    ("GET", memories_url() + "?limit=0", None, {}),
    ("GET", memories_url() + "?limit=abc", None, {}),
    ("GET", memories_url() + "?cursor=%%%", None, {}),
    ("POST", f"{memories_url()}/search", {"query": ""}, {}),
    ("POST", f"{memories_url()}/search", {"query": "x", "limit": 0}, {}),
    ("POST", f"{memories_url()}/search", {"query": "x", "limit": True}, {}),
    ("POST", f"/v1/agents/{AGENT}/facts?user=ann", {"facts": []}, {}),
    ("GET", "/v1/chats/%20", None, {}),
    ("GET", "/v1/chats/" + "c" * 400, None, {}),
    ("DELETE", "/v1/chats", None, {}),
    ("GET", "/v1/chats?cursor=" + "A" * 40, None, {}),
    ("PUT", "/v1/users/ann/consent", {"consent": "maybe"}, {}),
    ("PUT", "/v1/users/ann/consent", {"consent": True}, {}),
    ("PUT", "/v1/users/ann/consent", b"", {"content-type": "application/json"}),
    ("GET", "/v1/users/" + "u" * 300 + "/export", None, {}),
]


@pytest.mark.parametrize("method,url,body,headers", MALFORMED)
def test_malformed_bodies_and_ids_are_4xx_problems(client, keys, method, url, body, headers) -> None:
    auth = key_of(keys, "a", "ann") if "/facts" not in url else bearer(keys["a"])
    if isinstance(body, bytes) or body is None:
        answer = client.request(method, url, content=body, headers={**auth, **headers})
    else:
        answer = client.request(method, url, json=body, headers={**auth, **headers})
    assert_problem(answer)
