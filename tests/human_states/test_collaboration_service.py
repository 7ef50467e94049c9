"""Agent collaboration through the real service: a supervisor ``aiagent`` delegates to two
collaborator agents (sub-workflows offered as tools), talks with the user over the chat
endpoints, and survives a restart of the service while it waits for the user's next message —
the delegation recorded before the restart is not run again (specs/states-human.md §8)."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest

from tests.human_states.support import ROOT, token

pytestmark = pytest.mark.slow
ANN = token("ann")
MODEL_SCRIPT = {"replies": [
    {"tool_calls": [{"name": "researcher", "arguments": {"request": "facts about otters"}}]},
    {"text": "Otters hold hands while sleeping."},
    {"json": {"response": "They hold hands while sleeping. Shall I write the line?", "done": False}},
    {"tool_calls": [{"name": "writer", "arguments": {"request": "one line: Otters hold hands while sleeping."}}]},
    {"text": "Sleepy otters, holding hands."},
    {"json": {"response": "Here it is: Sleepy otters, holding hands.", "done": True}},
]}


@pytest.fixture(scope="module")
def service_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The supervisor example as a conversation (it waits for the user until it says done)."""
    target = tmp_path_factory.mktemp("collaboration")
    (target / "workflows").mkdir()
    for name in ("researcher.yaml", "writer.yaml"):
        shutil.copy(ROOT / "workflows" / "collaborators" / name, target / "workflows" / name)
    source = (ROOT / "workflows" / "supervisor.yaml").read_text()
    source = source.replace("    end: true\n", """    output:
      schema:
        type: object
        properties: {response: {type: string}, done: {type: boolean}}
        required: [response]
    agentOutcomes:
      - condition: '${ $agentOutcome.returnValues.done == true }'
        finish: true
        dataFilter: {data: '${ {text: .returnValues.response} }'}
      - finish: false
    end: true
""", 1)
    (target / "workflows" / "supervisor.yaml").write_text(source)
    return target


def say(client: httpx.Client, instance_id: str, text: str) -> dict:
    response = client.post(f"/v1/instances/{instance_id}/messages", json={"text": text}, headers=ANN)
    assert response.status_code == 200, response.text
    return response.json()


def test_a_supervisor_delegates_to_two_collaborators_across_a_restart(service, model_server) -> None:
    with httpx.Client(base_url=service.url, timeout=60) as client:
        started = client.post("/v1/workflows/supervisor/instances", json={"topic": "otters"},
                              headers={**ANN, "Prefer": "wait=60"})
        assert started.status_code == 201 and started.json()["status"] == "waiting", started.text
        instance_id = started.json()["id"]
        assert len(model_server.chat_requests) == 3  # supervisor, researcher, supervisor
        service.stop()
        service.start()
        done = say(client, instance_id, "Yes, write it.")
        history = client.get(f"/v1/instances/{instance_id}/history", headers=ANN).json()["items"]
    assert done["status"] == "completed" and done["output"]["text"] == "Here it is: Sleepy otters, holding hands."
    requests = [r.body for r in model_server.chat_requests]
    assert len(requests) == 6  # nothing recorded before the restart was asked again
    assert {t["function"]["name"] for t in requests[0]["tools"]} == {"researcher", "writer"}
    # each collaborator saw only the supervisor's request (its own memory scope)
    assert [m["role"] for m in requests[1]["messages"]] == ["system", "user"]
    assert requests[4]["messages"][-1]["content"] == "one line: Otters hold hands while sleeping."
    assert [m["role"] for m in requests[4]["messages"]] == ["system", "user"]
    # after the restart the supervisor still has the first turn, the researcher's answer included
    second_turn = requests[3]["messages"]
    assert any(m["role"] == "tool" and "Otters hold hands" in m["content"] for m in second_turn)
    assert second_turn[-1] == {"role": "user", "content": "Yes, write it."}
    steps = [r.get("step", "") for r in history if r.get("event") == "llm_call"]
    assert sum(":researcher/" in s for s in steps) == 1 and sum(":writer/" in s for s in steps) == 1
