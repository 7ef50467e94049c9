"""One A2A test agent process and one ``xflow serve`` process (with push callbacks) per module."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

pytest.importorskip("a2a.client")
pytest.importorskip("fastapi")

from tests.a2a.support import SECRET, SECRET_ENV, AgentProcess, ServiceProcess, write_workflow  # noqa: E402

#: (workflow id, mode, pollInterval) served by the module's service.
WORKFLOWS = (("ledger-blocking", "blocking", "PT0.2S"), ("ledger-poll", "poll", "PT0.2S"),
             ("ledger-push", "push", "PT1S"),
             # a fallback read only after a minute: what ends sooner was woken by a callback
             ("ledger-push-slow-fallback", "push", "PT60S"))


@pytest.fixture(scope="module")
def a2a_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("a2a")


@pytest.fixture(scope="module")
def agent(a2a_dir: Path) -> Iterator[AgentProcess]:
    process = AgentProcess(a2a_dir / "calls.jsonl").start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def service(a2a_dir: Path, agent: AgentProcess) -> Iterator[ServiceProcess]:
    workflows = a2a_dir / "workflows"
    workflows.mkdir()
    for workflow_id, mode, poll in WORKFLOWS:
        write_workflow(workflows, workflow_id, agent.port, mode, poll)
    os.environ[SECRET_ENV] = SECRET  # the service process inherits it
    process = ServiceProcess(workflows, f"sqlite:///{a2a_dir / 'store' / 'xflow.sqlite'}", auth="jwt",
                             extra=["--a2a-callback-secret-env", SECRET_ENV]).start()
    yield process
    process.stop()
