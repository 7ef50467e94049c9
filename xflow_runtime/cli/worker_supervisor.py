"""The worker processes of ``xflow serve --workers N``, kept at N while the service runs.

A worker exits by itself when it must not go on: status 75 when its lease ran out (the database
was gone for longer than the death timeout, or it was frozen) or it was declared dead
(specs/deployment.md §3). Every worker of a service goes that way in one database outage, and a
service whose workers are gone accepts starts that nobody runs, so the service starts a new worker
(a fresh executor id) for each one that exits, as systemd or Kubernetes would for ``xflow worker``.
A worker that exits soon after its start (a bad URL, a database still down) is started again
after a growing pause (1, 3, 7 … up to 30 s), not in a tight loop.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Sequence

#: A worker that lived this long before exiting is restarted at once.
HEALTHY_SECONDS = 30.0
MAX_PAUSE_SECONDS = 30.0


class WorkerSupervisor:
    def __init__(self, command: Sequence[str], count: int) -> None:
        self._command = list(command)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.processes: list[subprocess.Popen[bytes]] = []
        self._started: list[float] = []
        self._failures: list[int] = []
        for _ in range(count):
            self.processes.append(subprocess.Popen(self._command))
            self._started.append(time.monotonic())
            self._failures.append(0)
        self._thread = threading.Thread(target=self._watch, name="xflow-worker-supervisor", daemon=True)
        self._thread.start()

    def stop_restarting(self) -> list[subprocess.Popen[bytes]]:
        """No worker is started any more; the processes to stop."""
        with self._lock:
            self._stopping.set()
            return list(self.processes)

    def _watch(self) -> None:
        pauses: dict[int, float] = {}  # slot → when its worker may start again
        while not self._stopping.wait(1.0):
            for slot, process in enumerate(list(self.processes)):
                status = process.poll()
                if status is None:
                    continue
                now = time.monotonic()
                if slot not in pauses:
                    lived = now - self._started[slot]
                    self._failures[slot] = 0 if lived >= HEALTHY_SECONDS else self._failures[slot] + 1
                    pause = min(MAX_PAUSE_SECONDS, 2.0 ** self._failures[slot] - 1)
                    pauses[slot] = now + pause
                    print(f"xflow serve: worker {process.pid} exited with status {status}; starting a new one"
                          + (f" in {pause:.0f} s" if pause else ""), file=sys.stderr, flush=True)
                if now < pauses[slot]:
                    continue
                with self._lock:
                    if self._stopping.is_set():
                        return
                    self.processes[slot] = subprocess.Popen(self._command)
                    self._started[slot] = time.monotonic()
                del pauses[slot]
