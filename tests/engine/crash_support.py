"""Running `bin/xflow` in a subprocess and killing it at a chosen moment (the crash tests)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]
XFLOW = [sys.executable, str(REPO / "bin" / "xflow")]


def xflow(*args: str, cwd: Path = REPO) -> subprocess.Popen[str]:
    return subprocess.Popen([*XFLOW, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(REPO)})


def sigkill_when(process: subprocess.Popen[str], ready: Callable[[], bool], timeout: float = 60) -> bool:
    """SIGKILL ``process`` as soon as ``ready()``; False if it finished first."""
    deadline = time.monotonic() + timeout
    while not ready():
        if process.poll() is not None:
            return False
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError("the instance made no progress")
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait()
    return True
