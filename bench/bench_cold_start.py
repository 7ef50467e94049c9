"""Cold start of ``xflow run``: a fresh process runs ``workflows/order-approval.yaml`` (non-AI) and
prints its output. ``--ephemeral`` (in-process engine, target ≤ 0.3 s) is compared with the
durable default (DBOS on SQLite under ``./.xflow/``) and with a bare ``python3 -c pass`` measured in
the same run, so the figure can be read against the machine's own interpreter start-up.

    python3 bench/bench_cold_start.py

Output: one ``BENCH name key=value …`` line per measurement (median of several runs).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / "workflows" / "order-approval.yaml"
INPUT = json.dumps({"order": {"id": "A-1", "total": 50}})
RUNS = 7


def timed(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr}")
    return elapsed


def median_of(command: list[str], cwd: Path) -> float:
    timed(command, cwd)  # warm the OS file cache, not the process
    return statistics.median(timed(command, cwd) for _ in range(RUNS))


def main() -> None:
    xflow = [sys.executable, str(REPO / "bin" / "xflow"), "run", str(WORKFLOW), "--input", INPUT]
    with tempfile.TemporaryDirectory(prefix="xflow-cold-") as tmp:
        cwd = Path(tmp)
        python = median_of([sys.executable, "-c", "pass"], cwd)
        ephemeral = median_of([*xflow, "--ephemeral"], cwd)
        durable = median_of(xflow, cwd)
    print(f"BENCH cold_start_python median_s={python:.3f} runs={RUNS}")
    print(f"BENCH cold_start_ephemeral median_s={ephemeral:.3f} over_python_s={ephemeral - python:.3f} "
          f"target_s=0.3 runs={RUNS}")
    print(f"BENCH cold_start_durable median_s={durable:.3f} over_python_s={durable - python:.3f} "
          f"store=sqlite runs={RUNS}")


if __name__ == "__main__":
    main()
