"""A sync custom function that outlives its timeout no longer holds the process (specs/limits.md)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from tests.engine.crash_support import REPO, XFLOW

SLEEPER = {
    "id": "sleeper", "specVersion": "0.8", "start": "Sleep",
    "functions": [{"name": "sleepLong", "type": "custom", "operation": "python:tests.limits.sleepy_functions:sleep_long"}],
    "errors": [{"name": "late", "code": "timeout"}],
    "states": [
        {"name": "Sleep", "type": "operation", "timeouts": {"stateExecTimeout": "PT1S"},
         "actions": [{"functionRef": {"refName": "sleepLong", "arguments": {"seconds": 30}}}],
         "onErrors": [{"errorRef": "late", "transition": "Done"}], "end": True},
        {"name": "Done", "type": "inject", "data": {"gaveUp": True}, "end": True},
    ],
}


def test_the_process_exits_promptly_after_the_instance_ends(tmp_path: Path) -> None:
    workflow = tmp_path / "sleeper.json"
    workflow.write_text(json.dumps(SLEEPER))
    started = time.monotonic()
    finished = subprocess.run([*XFLOW, "run", str(workflow), "--ephemeral"], cwd=REPO, capture_output=True,
                              text=True, timeout=60, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    took = time.monotonic() - started
    assert finished.returncode == 0, finished.stderr
    assert json.loads(finished.stdout) == {"gaveUp": True}
    assert took < 15, f"the process waited for the abandoned call ({took:.1f} s; it sleeps 30 s)"
    assert "sleepLong" in finished.stderr and "discarded" in finished.stderr  # the warning names it
