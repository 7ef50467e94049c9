"""``userproxyagent`` through the real service's chat endpoints: a facilitator collecting a
three-field form over several messages (an invalid email asked for again), surviving a restart of
the service while it waits; a relay whose message and answer go over the same endpoints."""

from __future__ import annotations


import httpx
import pytest
import yaml

from tests.human_states.support import ROOT, token

pytestmark = pytest.mark.slow
MODEL_SCRIPT = yaml.safe_load((ROOT / "workflows" / "signup-facilitator.replies.yaml").read_text())
ANN = token("ann")


@pytest.fixture(scope="module")
def client(service) -> httpx.Client:
    with httpx.Client(base_url=service.url, timeout=60) as http:
        yield http


def say(client: httpx.Client, instance_id: str, text: str) -> dict:
    response = client.post(f"/v1/instances/{instance_id}/messages", json={"text": text}, headers=ANN)
    assert response.status_code == 200, response.text
    return response.json()


def test_a_facilitator_collects_a_form_over_chat_across_a_restart(client, service, model_server) -> None:
    started = client.post("/v1/workflows/signup-facilitator/instances", json={"name": "Ann", "message": "sign me up"},
                          headers={**ANN, "Prefer": "wait=60"})
    assert started.status_code == 201 and started.json()["status"] == "waiting", started.text
    instance_id = started.json()["id"]
    assert say(client, instance_id, "ann-at-example")["reply"] == "Thanks. How old are you?"
    service.stop()
    service.start()
    assert say(client, instance_id, "I am 34")["reply"].startswith("That email does not look right")
    done = say(client, instance_id, "ann@example.com")
    assert done["status"] == "completed" and done["output"]["profile"] == {"name": "Ann", "email": "ann@example.com",
                                                                           "age": 34}
    assert "/email: 'ann-at-example' does not match" in model_server.chat_requests[-2].messages[0]["content"]


def test_a_relay_over_chat(client) -> None:
    started = client.post("/v1/workflows/relay-question/instances", json={"order": "A-17"},
                          headers={**ANN, "Prefer": "wait=60"})
    assert started.status_code == 201 and started.json()["status"] == "waiting", started.text
    instance_id = started.json()["id"]
    history = client.get(f"/v1/instances/{instance_id}/history", headers=ANN).json()["items"]
    reply = [r for r in history if r.get("event") == "agent_reply"][-1]
    assert reply["reply"] == "Your order A-17 is ready. Deliver today or tomorrow?" and reply["media"][0]["uuid"] == "map-1"
    done = say(client, instance_id, "today")
    assert done["status"] == "completed" and done["output"]["when"] == "today"
