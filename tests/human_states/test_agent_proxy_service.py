"""``aiagentproxy`` through the real service, against a small external agent server started by
the test: the agent answers synchronously, or acknowledges and calls back later (asynchronous);
a callback repeated is a duplicate, a forged or foreign token is refused, a late one (after the
state's timeout) is refused without harm, a wait survives a restart of the service, and a crash
between recording the answer and waking the instance loses nothing (specs/states-human.md §7)."""

from __future__ import annotations

import shutil
import threading
import time
from typing import Any, Iterator

import httpx
import pytest

from tests.human_states.support import ROOT, ServiceProcess, eventually, token
from tests.support.json_server import JsonServer
from tests.service.support import assert_problem

pytestmark = pytest.mark.slow

SECRET_ENV = "XFLOW_TEST_CALLBACK_SECRET"
SECRET = "a-callback-secret-of-at-least-thirty-two-bytes!"
BO = token("bo")
ADMIN = token("ops", role="service")


class AgentServer(JsonServer):
    """``POST /api/execute``: a question starting with ``sync`` is answered at once; ``async``
    is acknowledged and answered by a callback a moment later; anything else is acknowledged and
    left for the test to answer. Every request is kept."""

    def __init__(self) -> None:
        super().__init__(self._answer)

    def _answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        question = body["agentContext"]["userMessage"]
        if question.startswith("sync"):
            return 200, {"returnValues": {"response": f"sync answer to {question}"}, "log": "sync"}
        if question.startswith("async"):
            threading.Thread(target=self._call_back, args=(body,), daemon=True).start()
        return 202, {"requestId": body["requestId"]}

    def _call_back(self, body: dict[str, Any]) -> None:
        time.sleep(0.3)
        question = body["agentContext"]["userMessage"]
        httpx.post(body["callbackUrl"], json={"returnValues": {"response": f"later: {question}"}, "log": "called back"},
                   timeout=30)

    def request_for(self, question: str) -> dict[str, Any]:
        return eventually(lambda: next((r["body"] for r in self.requests
                                        if r["body"]["agentContext"]["userMessage"] == question), None))


@pytest.fixture(scope="module")
def agent() -> Iterator[AgentServer]:
    server = AgentServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def proxy_service(tmp_path_factory: pytest.TempPathFactory, agent: AgentServer) -> Iterator[ServiceProcess]:
    target = tmp_path_factory.mktemp("proxy")
    (target / "workflows").mkdir()
    source = (ROOT / "workflows" / "proxy-agent.yaml").read_text()
    # the agent's address, and a bounded wait whose timeout the workflow catches: 10 minutes, and
    # 3 seconds in proxy-agent-hasty (for late callbacks)
    source = source.replace("    type: rest\n", f"    type: rest\n    metadata: {{baseUrl: '{agent.url}'}}\n", 1)
    source = source.replace("start: ask\n", "start: ask\nerrors: [{name: no-answer, code: timeout}]\n", 1)
    source = source.replace("    agentOutcomes:\n", "    timeouts: {eventTimeout: PT10M}\n"
                            "    onErrors: [{errorRef: no-answer, transition: human}]\n    agentOutcomes:\n", 1)
    (target / "workflows" / "proxy-agent.yaml").write_text(source)
    hasty = source.replace("id: proxy-agent\n", "id: proxy-agent-hasty\n").replace("PT10M", "PT3S")
    (target / "workflows" / "proxy-agent-hasty.yaml").write_text(hasty)
    shutil.copy(ROOT / "workflows" / "expense-approval.yaml", target / "workflows")
    process = ServiceProcess(target / "workflows", f"sqlite:///{target / 'store' / 'xflow.sqlite'}", auth="jwt",
                             extra=["--callback-secret-env", SECRET_ENV], env={SECRET_ENV: SECRET}).start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def client(proxy_service: ServiceProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=proxy_service.url, timeout=60) as http:
        yield http


def start(client: httpx.Client, question: str, customer: str = "c1", workflow: str = "proxy-agent") -> str:
    response = client.post(f"/v1/workflows/{workflow}/instances", json={"question": question, "customer": customer},
                           headers=BO)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def finished(client: httpx.Client, instance_id: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        body = client.get(f"/v1/instances/{instance_id}", headers=ADMIN).json()
        return body if body["status"] in ("completed", "failed") else None

    return eventually(done)


def callback(client: httpx.Client, request: dict[str, Any], answer: dict[str, Any] | None = None, *,
             url: str | None = None) -> httpx.Response:
    """POST the answer to the callback URL the agent was given (on this client's service)."""
    path = (url or request["callbackUrl"]).split("://", 1)[1].split("/", 1)[1]
    return client.post("/" + path, json=answer or {"returnValues": {"response": "by hand"}, "log": "by hand"})


def test_an_agent_that_answers_synchronously_still_works(client, agent) -> None:
    instance_id = start(client, "sync: my invoice")
    assert finished(client, instance_id)["output"]["answer"] == "sync answer to sync: my invoice"
    request = agent.request_for("sync: my invoice")
    late = callback(client, request)  # the request was answered synchronously: a callback changes nothing
    assert_problem(late, 409)


def test_an_agent_answers_by_callback_and_its_turn_is_remembered(client, agent) -> None:
    instance_id = start(client, "async: my refund", customer="c-async")
    body = finished(client, instance_id)
    assert body["status"] == "completed" and body["output"]["answer"] == "later: async: my refund"
    request = agent.request_for("async: my refund")
    assert request["workflowId"] == "proxy-agent" and request["requestId"] in request["callbackUrl"]
    assert request["callbackUrl"].startswith(client.base_url.__str__().rstrip("/") + "/v1/callbacks/agent-proxy/")
    # the turn is in chat memory: the next request of the same customer carries it
    second = start(client, "sync: and now?", customer="c-async")
    finished(client, second)
    remembered = agent.request_for("sync: and now?")["agentContext"]["messages"]
    assert [(m["role"], m["content"]) for m in remembered] == [("user", "async: my refund"),
                                                              ("assistant", "called back")]


def test_a_repeated_callback_is_a_duplicate_and_another_answer_a_conflict(client, agent) -> None:
    instance_id = start(client, "hold: twice")
    request = agent.request_for("hold: twice")
    answer = {"returnValues": {"response": "first"}, "log": "first"}
    first = callback(client, request, answer)
    assert first.status_code == 200 and first.json() == {"requestId": request["requestId"], "status": "answered",
                                                         "duplicate": False}
    again = callback(client, request, answer)
    assert again.status_code == 200 and again.json()["duplicate"] is True
    other = callback(client, request, {"returnValues": {"response": "second"}})
    assert_problem(other, 409)
    body = finished(client, instance_id)
    assert body["output"]["answer"] == "first"
    history = client.get(f"/v1/instances/{instance_id}/history", headers=ADMIN).json()["items"]
    assert not [r for r in history if r.get("event") == "agent_proxy_event_ignored"]


def test_forged_and_foreign_tokens_are_refused(client, agent) -> None:
    instance_id = start(client, "hold: forged")
    request = agent.request_for("hold: forged")
    start(client, "hold: other")
    other = agent.request_for("hold: other")
    url = request["callbackUrl"]
    version, claims, mac = url.split("token=", 1)[1].split(".")
    forged_mac = url.split("token=")[0] + "token=" + ".".join([version, claims, ("A" if mac[0] != "A" else "B") + mac[1:]])
    problem = assert_problem(callback(client, request, url=forged_mac), 403)
    assert problem["type"].endswith("callback-token-invalid") and "token=" not in problem.get("detail", "")
    # a genuine token, but another request's: refused
    foreign = url.split("token=")[0] + "token=" + other["callbackToken"]
    assert_problem(callback(client, request, url=foreign), 403)
    assert_problem(callback(client, request, url=url.split("?")[0]), 403)  # no token at all
    not_an_answer = callback(client, request, {"hello": 1})
    assert_problem(not_an_answer, 422)
    assert client.get(f"/v1/instances/{instance_id}", headers=ADMIN).json()["status"] == "running"
    # the real token in a header works too
    path = "/" + url.split("://", 1)[1].split("/", 1)[1].split("?")[0]
    answered = client.post(path, json={"returnValues": {"response": "genuine"}},
                           headers={"X-Xflow-Callback-Token": request["callbackToken"]})
    assert answered.status_code == 200, answered.text
    assert finished(client, instance_id)["output"]["answer"] == "genuine"


def test_a_late_callback_changes_nothing(client, agent) -> None:
    instance_id = start(client, "hold: late", workflow="proxy-agent-hasty")
    body = finished(client, instance_id)  # eventTimeout PT3S, caught by onErrors
    assert body["status"] == "completed" and body["output"].get("escalated") is True
    late = callback(client, agent.request_for("hold: late"))
    problem = assert_problem(late, 410)
    assert problem["type"].endswith("callback-late")
    assert client.get(f"/v1/instances/{instance_id}", headers=ADMIN).json()["output"] == body["output"]


def test_a_wait_survives_a_restart_of_the_service(client, agent, proxy_service) -> None:
    instance_id = start(client, "hold: restart")
    request = agent.request_for("hold: restart")
    proxy_service.stop()
    proxy_service.start()
    response = callback(client, request, {"returnValues": {"response": "after the restart"}})
    assert response.status_code == 200, response.text
    assert finished(client, instance_id)["output"]["answer"] == "after the restart"


def test_a_crash_between_recording_the_answer_and_waking_the_instance_loses_nothing(client, agent,
                                                                                    proxy_service) -> None:
    instance_id = start(client, "hold: crash")
    request = agent.request_for("hold: crash")
    proxy_service.stop()
    proxy_service.env["XFLOW_CRASH_AT"] = "agent-proxy-between-write-and-wake"
    proxy_service.start()
    try:
        with pytest.raises(httpx.HTTPError):  # the process dies in the middle of the request
            callback(client, request, {"returnValues": {"response": "recorded before the crash"}})
        assert proxy_service.stop() == 86
    finally:
        proxy_service.env.pop("XFLOW_CRASH_AT")
        if proxy_service.process is None:
            proxy_service.start()
    # the answer was recorded; the restarted service sends the wake-up it owed, once
    body = finished(client, instance_id)
    assert body["output"]["answer"] == "recorded before the crash"
    again = callback(client, request, {"returnValues": {"response": "recorded before the crash"}})
    assert again.status_code == 200 and again.json()["duplicate"] is True
    history = client.get(f"/v1/instances/{instance_id}/history", headers=ADMIN).json()["items"]
    assert not [r for r in history if r.get("event") == "agent_proxy_event_ignored"]
