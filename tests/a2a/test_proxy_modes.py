"""``aiagentproxy`` reaching a real ``a2a-sdk`` agent on 127.0.0.1 through a real ``xflow serve``
(specs/a2a.md §3, §4): the three modes, the task states and their outcomes or error codes."""

from __future__ import annotations

import pytest

from tests.a2a.support import AgentProcess, ServiceProcess, history, start_and_wait

MODES = ("ledger-blocking", "ledger-poll", "ledger-push")


@pytest.mark.parametrize("workflow", MODES)
def test_a_completed_task_is_the_agent_outcome(service: ServiceProcess, agent: AgentProcess, workflow: str) -> None:
    view = start_and_wait(service, workflow, "slow 0.3 twelve")
    assert view["status"] == "completed", view
    assert view["output"] == {"request": "slow 0.3 twelve", "status": "completed", "log": "echo: twelve",
                              "answer": {"answer": "twelve", "n": 42, "response": "echo: twelve"}}
    calls = [c for c in agent.calls() if c["text"] == "slow 0.3 twelve" and c["event"] == "completed"]
    assert calls, "the agent was called"
    mode = workflow.removeprefix("ledger-")
    [call] = [r for r in history(service, view["id"]) if r["event"] == "a2a_call"]
    assert call["mode"] == mode


@pytest.mark.parametrize("workflow", MODES)
def test_input_required_is_routable(service: ServiceProcess, workflow: str) -> None:
    view = start_and_wait(service, workflow, "ask me")
    assert view["status"] == "completed", view
    assert view["output"] == {"request": "ask me", "question": "Which account?", "asked": True}


@pytest.mark.parametrize("workflow", MODES)
@pytest.mark.parametrize(("request_text", "code"), [("fail", "A2ATaskFailed"), ("reject", "A2ATaskRejected"),
                                                    ("auth", "A2AAuthRequired")])
def test_failure_states_are_documented_error_codes(service: ServiceProcess, workflow: str, request_text: str,
                                                   code: str) -> None:
    view = start_and_wait(service, workflow, request_text)
    assert view["status"] == "failed", view
    assert view["error"]["code"] == code


def test_push_mode_is_woken_by_the_agents_callback(service: ServiceProcess) -> None:
    """The fallback read of this workflow comes after 60 s: an answer within the wait was a callback."""
    view = start_and_wait(service, "ledger-push-slow-fallback", "slow 1 callback", wait=45)
    assert view["status"] == "completed", view
    reads = [r for r in history(service, view["id"]) if r["event"] == "a2a_task_read"]
    assert reads and reads[-1]["woken_by"] == "callback" and reads[-1]["status"] == "completed"
