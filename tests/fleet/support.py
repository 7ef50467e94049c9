"""Worker processes of a fleet (``bin/xflow worker``) for the fleet tests, and the checks on the
invocation log of :mod:`tests.fleet.fleet_functions`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Worker:
    process: subprocess.Popen[str]
    executor_id: str

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def terminate(self, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)


def start_worker(url: str, *args: str, dead_after: float = 5.0, env: dict[str, str] | None = None,
                 stderr: Any = None) -> Worker:
    return start_workers(1, url, *args, dead_after=dead_after, env=env, stderr=stderr)[0]


def start_workers(count: int, url: str, *args: str, dead_after: float = 5.0,
                  env: dict[str, str] | None = None, stderr: Any = None) -> list[Worker]:
    """``count`` workers started together (their start-ups overlap), returned once all are ready
    (``stderr``: a file their logs go to; default this process's)."""
    environment = {**os.environ, "PYTHONPATH": str(REPO), "FLEET_TEST_DB": url,
                   "XFLOW_DEAD_AFTER_SECONDS": str(dead_after), **(env or {})}
    processes = [subprocess.Popen([sys.executable, str(REPO / "bin" / "xflow"), "worker", "--db", url, "--json",
                                   *args], cwd=REPO, stdout=subprocess.PIPE, stderr=stderr, text=True, env=environment)
                 for _ in range(count)]
    workers = []
    for process in processes:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"worker exited with {process.wait()} before it was ready")
        workers.append(Worker(process, json.loads(line)["executor_id"]))
    return workers


def invocations(url: str) -> list[tuple[str, str, int, Any, Any]]:
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as connection:
        return connection.execute("SELECT instance, label, pid, started, ended FROM fleet_invocations "
                                  "ORDER BY id").fetchall()


def database_now(url: str) -> Any:
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as connection:
        return connection.execute("SELECT clock_timestamp()").fetchone()[0]


def check_invocations(rows: list[tuple[str, str, int, Any, Any]], killed_pid: int | None, killed_at: Any) -> int:
    """Assert no completed step ran twice and no instance ran on two workers at once; return how
    many invocations ran again (each one in flight on the killed worker when it died)."""
    by_key: dict[tuple[str, str], list[tuple[int, Any, Any]]] = defaultdict(list)
    by_instance: dict[str, list[tuple[int, Any, Any]]] = defaultdict(list)
    for instance, label, pid, started, ended in rows:
        end = ended if ended is not None else (killed_at if pid == killed_pid else None)
        assert end is not None, f"{instance}/{label} on live worker {pid} never ended"
        by_key[(instance, label)].append((pid, started, end))
        by_instance[instance].append((pid, started, end))
    again = 0
    for key, runs in by_key.items():
        for pid, _, _ in runs[:-1]:  # every run but the last was cut short by the kill
            assert pid == killed_pid, f"{key} ran {len(runs)} times, not only across the kill: {runs}"
            again += 1
    for instance, runs in by_instance.items():
        runs.sort(key=lambda run: run[1])
        for (pid_a, _, end_a), (pid_b, start_b, _) in zip(runs, runs[1:]):
            if pid_a != pid_b:
                assert end_a <= start_b, f"{instance} ran on workers {pid_a} and {pid_b} at once: {runs}"
    return again


def check_reruns(rows: list[tuple[str, str, int, Any, Any]], open_end: Any,
                 may_rerun: Callable[[int, Any], bool]) -> dict[str, set[int]]:
    """Assert every step ran, again only where ``may_rerun(pid, started)`` allows its earlier
    runs, and no instance ran on two workers at once (a run that never ended ends at
    ``open_end``: its worker died by then). Returns the pids each instance ran on."""
    runs: dict[tuple[str, str], list[tuple[int, Any, Any]]] = defaultdict(list)
    for instance, label, pid, started, ended in rows:
        runs[(instance, label)].append((pid, started, ended if ended is not None else open_end))
    for key, key_runs in runs.items():
        for pid, started, _ in key_runs[:-1]:
            assert may_rerun(pid, started), f"{key} ran again: {key_runs}"
    by_instance: dict[str, list[tuple[int, Any, Any]]] = defaultdict(list)
    for (instance, _), key_runs in runs.items():
        by_instance[instance].extend(key_runs)
    for instance, instance_runs in by_instance.items():
        instance_runs.sort(key=lambda run: run[1])
        for (pid_a, _, end_a), (pid_b, start_b, _) in zip(instance_runs, instance_runs[1:]):
            if pid_a != pid_b:
                assert end_a <= start_b, f"{instance} ran on workers {pid_a} and {pid_b} at once: {instance_runs}"
    return {instance: {run[0] for run in instance_runs} for instance, instance_runs in by_instance.items()}


def worker_state(url: str, executor_id: str) -> str:
    """A worker's row state in ``xflow_workers`` (running, draining, dead, exited, recovered)."""
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as connection:
        return connection.execute("SELECT state FROM xflow_workers WHERE executor_id = %s", (executor_id,)).fetchone()[0]


def stopped(pid: int) -> bool:
    """Whether the process is stopped (SIGSTOP, or a freeze point)."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] == "T"


def fleet_table(url: str) -> None:
    import psycopg

    from tests.fleet.fleet_functions import TABLE

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as connection:
        connection.execute(TABLE)
