"""Kill a durable instance with SIGKILL at random points, resume it, and check it finishes with the
output of an uninterrupted run without re-running completed functions.

A function that was running when the process died may run again (the step in flight at a crash
is retried: effects must be idempotent). A function whose step completed must never run again.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

from tests.engine.crash_support import REPO, XFLOW, sigkill_when, xflow
STATES = 20


def write_workflow(path: Path) -> None:
    """A 20-state workflow: each operation state calls the ``record`` custom function; every
    fourth state runs under a state timeout (a timer raced against the call)."""
    states = []
    for n in range(STATES):
        state = {
            "name": f"S{n:02d}",
            "type": "operation",
            "actions": [{
                "functionRef": {"refName": "record", "arguments": {"log": "${ .log }", "n": n}},
                "actionDataFilter": {"toStateData": f"${{ .results.s{n:02d} }}"},
            }],
        }
        if n % 4 == 0:  # timers raced against work must replay the way they ran
            state["timeouts"] = {"stateExecTimeout": "PT60S"}
        if n + 1 < STATES:
            state["transition"] = f"S{n + 1:02d}"
        else:
            state["end"] = True
        states.append(state)
    document = {
        "id": "crash-twenty", "version": "1.0", "specVersion": "0.8", "start": "S00",
        "functions": [{"name": "record", "type": "custom",
                       "operation": "python:tests.engine.crash_functions:record"}],
        "states": states,
    }
    path.write_text(json.dumps(document, indent=2))


def log_lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def kill_when(process: subprocess.Popen[str], log: Path, lines: int) -> bool:
    """SIGKILL ``process`` once the log has ``lines`` lines; False if it finished first."""
    return sigkill_when(process, lambda: len(log_lines(log)) >= lines)


def executions(lines: list[str]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for line in lines:
        if line.startswith("start "):
            n = int(line.split()[1])
            counts[n] = counts.get(n, 0) + 1
    return counts


@pytest.mark.slow
def test_killed_instances_resume_to_the_uninterrupted_output(tmp_path: Path) -> None:
    workflow = tmp_path / "twenty.json"
    write_workflow(workflow)
    db = f"sqlite:///{tmp_path / 'crash.sqlite'}"

    reference_log = tmp_path / "reference.log"
    reference = subprocess.run([*XFLOW, "run", str(workflow), "--ephemeral", "--input",
                                json.dumps({"log": str(reference_log)})],
                               cwd=REPO, capture_output=True, text=True, timeout=120)
    assert reference.returncode == 0, reference.stderr
    expected = json.loads(reference.stdout)
    assert expected["results"] == {f"s{n:02d}": n * n for n in range(STATES)}

    log = tmp_path / "crash.log"
    rng = random.Random(20261121)
    # Kill points as log lengths (2 lines per function), increasing, some mid-function (odd).
    kill_points = sorted(rng.sample(range(2, 2 * STATES - 4), 4))
    in_flight_at_kill: list[int] = []
    process = xflow("run", str(workflow), "--db", db, "--id", "crash-1",
                    "--input", json.dumps({"log": str(log)}), cwd=REPO)
    for point in kill_points:
        assert kill_when(process, log, point), "the instance finished before it could be killed"
        started = [int(line.split()[1]) for line in log_lines(log) if line.startswith("start ")]
        in_flight_at_kill.append(started[-1])
        process = xflow("resume", "crash-1", "--db", db, cwd=REPO)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert json.loads(out) == {**expected, "log": str(log)}

    counts = executions(log_lines(log))
    assert sorted(counts) == list(range(STATES))
    for n, count in counts.items():
        # Only the function in flight at a kill may run again, once per such kill.
        assert count <= 1 + in_flight_at_kill.count(n), (n, count, in_flight_at_kill)

    shown = subprocess.run([*XFLOW, "show", "crash-1", "--db", db], cwd=REPO, capture_output=True,
                           text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    described = json.loads(shown.stdout)
    assert described["status"] == "SUCCESS"
    # History is keyed by instance + sequence: replays after each kill did not duplicate it.
    assert [visit["state"] for visit in described["states"]] == [f"S{n:02d}" for n in range(STATES)]


def parallel_workflow(path: Path) -> None:
    """Two parallel states of three branches, three calls per branch, with uneven pauses, so the
    branches' calls interleave differently in every run. Call ``n`` = state*100 + branch*10 + k."""
    def branches(state: int) -> list[dict]:
        return [{"name": f"B{state}{b}", "actions": [
            {"functionRef": {"refName": "record", "arguments": {
                "log": "${ .log }", "n": state * 100 + b * 10 + k, "pause": 0.02 * ((b + k) % 3)}},
             "actionDataFilter": {"toStateData": f"${{ .r{state}{b}{k} }}"}} for k in range(3)]}
            for b in range(3)]
    document = {
        "id": "crash-parallel", "version": "1.0", "specVersion": "0.8", "start": "Fan0",
        "functions": [{"name": "record", "type": "custom",
                       "operation": "python:tests.engine.crash_functions:record"}],
        "states": [{"name": "Fan0", "type": "parallel", "branches": branches(0), "transition": "Fan1"},
                   {"name": "Fan1", "type": "parallel", "branches": branches(1), "end": True}],
    }
    path.write_text(json.dumps(document))


@pytest.mark.slow
def test_killed_parallel_instances_resume_without_rerunning_completed_calls(tmp_path: Path) -> None:
    workflow = tmp_path / "parallel.json"
    parallel_workflow(workflow)
    db = f"sqlite:///{tmp_path / 'crash.sqlite'}"
    reference = subprocess.run([*XFLOW, "run", str(workflow), "--ephemeral", "--input",
                                json.dumps({"log": str(tmp_path / "reference.log")})],
                               cwd=REPO, capture_output=True, text=True, timeout=120)
    assert reference.returncode == 0, reference.stderr
    expected = json.loads(reference.stdout)

    log = tmp_path / "crash.log"
    kill_points = sorted(random.Random(7).sample(range(2, 30), 3))
    in_flight: list[set[int]] = []
    process = xflow("run", str(workflow), "--db", db, "--id", "par-1",
                    "--input", json.dumps({"log": str(log)}), cwd=REPO)
    for point in kill_points:
        assert kill_when(process, log, point), "the instance finished before it could be killed"
        # In flight at the kill: per branch, the last call it started.
        last_per_branch: dict[int, int] = {}
        for line in log_lines(log):
            if line.startswith("start "):
                n = int(line.split()[1])
                last_per_branch[n // 10] = n
        in_flight.append(set(last_per_branch.values()))
        process = xflow("resume", "par-1", "--db", db, cwd=REPO)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert json.loads(out) == {**expected, "log": str(log)}
    counts = executions(log_lines(log))
    assert sorted(counts) == sorted(s * 100 + b * 10 + k for s in range(2) for b in range(3) for k in range(3))
    for n, count in counts.items():
        assert count <= 1 + sum(n in calls for calls in in_flight), (n, count, in_flight)
