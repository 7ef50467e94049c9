"""One ``xflow serve`` process per test module, with its own SQLite files."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterator

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from tests.human_states.support import ROOT, Service  # noqa: E402

#: The examples the tests serve (they run as the README says).
EXAMPLES = ("expense-approval.yaml",)


@pytest.fixture(scope="module")
def service_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("human")
    (target / "workflows").mkdir()
    for name in EXAMPLES:
        shutil.copy(ROOT / "workflows" / name, target / "workflows" / name)
    return target


@pytest.fixture(scope="module")
def service(service_dir: Path) -> Iterator[Service]:
    process = Service(service_dir / "workflows", f"sqlite:///{service_dir / 'store' / 'xflow.sqlite'}").start()
    yield process
    process.stop()
