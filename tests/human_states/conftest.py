"""One ``xflow serve`` process per test module, with its own SQLite files."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterator

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from tests.human_states.support import ROOT, ServiceProcess  # noqa: E402
from xflow_runtime.testing import ScriptedModelServer  # noqa: E402

#: The examples the tests serve (they run as the README says).
EXAMPLES = ("expense-approval.yaml", "signup-facilitator.yaml", "relay-question.yaml")


@pytest.fixture(scope="module")
def service_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("human")
    (target / "workflows").mkdir()
    for name in EXAMPLES:
        shutil.copy(ROOT / "workflows" / name, target / "workflows" / name)
    return target


@pytest.fixture(scope="module")
def model_server(request: pytest.FixtureRequest) -> Iterator[ScriptedModelServer | None]:
    """The scripted model server of a module that sets ``MODEL_SCRIPT`` (else none)."""
    script = getattr(request.module, "MODEL_SCRIPT", None)
    if script is None:
        yield None
        return
    with ScriptedModelServer(script) as server:
        yield server


@pytest.fixture(scope="module")
def service(service_dir: Path, model_server: ScriptedModelServer | None) -> Iterator[ServiceProcess]:
    process = ServiceProcess(service_dir / "workflows", f"sqlite:///{service_dir / 'store' / 'xflow.sqlite'}",
                             llm_api_base=model_server.api_base if model_server else None, auth="jwt").start()
    yield process
    process.stop()
