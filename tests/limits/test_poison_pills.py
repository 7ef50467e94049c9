"""An instance whose step kills its process is recovered a bounded number of times, then parked as
failed with ``ProcessCrashed``; the next process starts cleanly (specs/limits.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from tests.engine.crash_support import REPO, XFLOW

WORKFLOW = {
    "id": "poison", "specVersion": "0.8", "start": "Die",
    "functions": [{"name": "die", "type": "custom", "operation": "python:tests.limits.crash_functions:die"}],
    "states": [{"name": "Die", "type": "operation", "actions": [{"functionRef": "die"}], "end": True}],
}
ATTEMPTS = 2


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "XFLOW_MAX_RECOVERY_ATTEMPTS": str(ATTEMPTS)}


def runner(script: str, definition: dict, tmp_path: Path) -> tuple[Callable[[str], subprocess.CompletedProcess[str]], str]:
    """``(process, store URL)``: ``process(mode)`` runs one process of ``tests/limits/<script>`` on
    the test's store, with the recovery limit at :data:`ATTEMPTS`."""
    workflow = tmp_path / f"{definition['id']}.json"
    workflow.write_text(json.dumps(definition))
    url = f"sqlite:///{tmp_path / (definition['id'] + '.sqlite')}"

    def process(mode: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(REPO / "tests" / "limits" / script), mode, url, str(workflow)],
                              cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=120)

    return process, url


@pytest.mark.slow
def test_a_step_that_kills_its_process_is_parked_after_the_configured_recoveries(tmp_path: Path) -> None:
    process, url = runner("poison_runner.py", WORKFLOW, tmp_path)

    assert process("start").returncode == 3  # the step called os._exit(3)
    for _ in range(ATTEMPTS):  # each restart recovers the instance, which kills the process again
        assert process("recover").returncode == 3
    parking = process("recover")  # one recovery too many: parked instead of run
    assert parking.returncode == 0, parking.stderr
    assert json.loads(parking.stdout) == {"status": "MAX_RECOVERY_ATTEMPTS_EXCEEDED"}

    shown = subprocess.run([*XFLOW, "show", "poison", "--db", url], cwd=tmp_path, env=environment(), capture_output=True,
                           text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    described = json.loads(shown.stdout)
    assert described["status"] == "MAX_RECOVERY_ATTEMPTS_EXCEEDED"
    assert described["error"]["code"] == "ProcessCrashed"

    clean = process("recover")  # the next process starts cleanly and leaves the parked instance alone
    assert clean.returncode == 0, clean.stderr
    assert json.loads(clean.stdout) == {"status": "MAX_RECOVERY_ATTEMPTS_EXCEEDED"}


WAITING = {
    "id": "waiter", "specVersion": "0.8", "start": "Wait",
    "events": [{"name": "go", "type": "go", "source": "test"}],
    "states": [{"name": "Wait", "type": "event", "end": True,
                "onEvents": [{"eventRefs": ["go"], "eventDataFilter": {"toStateData": "${ .got }"}}]}],
}


@pytest.mark.slow
def test_a_waiting_instance_killed_more_often_than_the_limit_is_not_parked(tmp_path: Path) -> None:
    # Each process recovers the instance, replays it up to its live wait and is killed there: a
    # crash count that also counted these dispatches would park it at the third.
    process, _ = runner("waiting_runner.py", WAITING, tmp_path)

    for mode in ["start"] + ["recover"] * (ATTEMPTS + 2):
        killed = process(mode)
        assert killed.returncode == 9, killed.stderr
        assert json.loads(killed.stdout) == {"reached_wait": True}, killed.stderr
    finished = process("finish")
    assert finished.returncode == 0, finished.stderr
    assert json.loads(finished.stdout) == {"status": "SUCCESS", "output": {"got": {"ok": True}}}
