"""SIGKILL of the runtime during an A2A wait (specs/a2a.md §3): after the restart the instance
resumes its wait, the agent's call log shows no completed call repeated, and the output equals
the uninterrupted run's."""

from __future__ import annotations

import signal

import httpx
import pytest

from tests.a2a.support import (AgentProcess, ServiceProcess, eventually, history, service_token, start_and_wait,
                               view)


@pytest.mark.parametrize("workflow", ["ledger-push", "ledger-poll"])
def test_a_sigkill_during_the_wait_repeats_no_completed_call(service: ServiceProcess, agent: AgentProcess,
                                                             workflow: str) -> None:
    request = f"slow 3 crash-{workflow}"
    uninterrupted = start_and_wait(service, workflow, request)
    assert uninterrupted["status"] == "completed", uninterrupted

    started = httpx.post(f"{service.url}/v1/workflows/{workflow}/instances", json={"request": request},
                         headers=service_token())
    assert started.status_code == 201, started.text
    instance_id = started.json()["id"]
    task = eventually(lambda: next((r for r in history(service, instance_id) if r["event"] == "a2a_task"), None))
    # the agent is working on the task and the instance is waiting for it: kill the runtime
    assert service.stop(signal.SIGKILL) == -signal.SIGKILL
    # the agent finishes while the runtime is down (its push, if any, finds nobody)
    eventually(lambda: any(c["task_id"] == task["task_id"] and c["event"] == "completed" for c in agent.calls()))
    service.start()
    resumed = eventually(lambda: (v := view(service, instance_id))["status"] == "completed" and v)
    assert resumed["output"] == uninterrupted["output"]
    mine = [c for c in agent.calls() if c["text"] == request]
    # two runs (uninterrupted + crashed) → two tasks, each started and completed exactly once
    assert sorted(c["event"] for c in mine) == ["completed", "completed", "started", "started"]
    assert len({c["task_id"] for c in mine}) == 2
    sends = [r for r in history(service, instance_id) if r["event"] == "a2a_task"]
    assert len(sends) == 1
