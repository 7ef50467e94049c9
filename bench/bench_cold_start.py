"""Cold start of ``xflow run``: a fresh process runs ``workflows/order-approval.yaml`` (non-AI) and
prints its output. ``--ephemeral`` (in-process engine, target ≤ 0.15 s) is compared with the
durable default (DBOS on SQLite under ``./.xflow/``) and with a bare ``python3 -c pass`` measured in
the same run, so the figure can be read against the machine's own interpreter start-up.

    python3 bench/bench_cold_start.py

Output: one ``BENCH name key=value …`` line per measurement (median of several runs): wall time,
and ``cpu_s`` (user + system time of the child), which a loaded shared machine inflates far less.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / "workflows" / "order-approval.yaml"
INPUT = json.dumps({"order": {"id": "A-1", "total": 50}})


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_of(command: list[str], cwd: Path, runs_wanted: int) -> tuple[float, float]:
    timed(command, cwd)  # warm the OS file cache, not the process
    runs = [timed(command, cwd) for _ in range(runs_wanted)]
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    xflow = [sys.executable, str(REPO / "bin" / "xflow"), "run", str(WORKFLOW), "--input", INPUT]
    with tempfile.TemporaryDirectory(prefix="xflow-cold-") as tmp:
        cwd = Path(tmp)
        python = median_of([sys.executable, "-c", "pass"], cwd, runs)
        ephemeral = median_of([*xflow, "--ephemeral"], cwd, runs)
        durable = median_of(xflow, cwd, runs)
    load = os.getloadavg()[0]
    print(f"BENCH cold_start_python median_s={python[0]:.3f} cpu_s={python[1]:.3f} runs={runs} load={load:.1f}")
    print(f"BENCH cold_start_ephemeral median_s={ephemeral[0]:.3f} cpu_s={ephemeral[1]:.3f} "
          f"over_python_s={ephemeral[0] - python[0]:.3f} target_s=0.15 runs={runs} load={load:.1f}")
    print(f"BENCH cold_start_durable median_s={durable[0]:.3f} cpu_s={durable[1]:.3f} "
          f"over_python_s={durable[0] - python[0]:.3f} store=sqlite runs={runs} load={load:.1f}")


if __name__ == "__main__":
    main()
