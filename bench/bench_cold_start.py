"""Cold start of ``xflow run``: a fresh process runs ``workflows/order-approval.yaml`` (non-AI) and
prints its output. ``--ephemeral`` (in-process engine, target ≤ 0.15 s) is compared with the
durable default (DBOS on SQLite under ``./.xflow/``) and with a bare ``python3 -c pass`` measured in
the same run, so the figure can be read against the machine's own interpreter start-up.

    python3 bench/bench_cold_start.py

Output: one ``BENCH name key=value …`` line per measurement (median of several runs): wall time,
and ``cpu_s`` (user + system time of the child), which a loaded shared machine inflates far less.

Bytecode: an installed package runs from the ``.pyc`` files pip compiled; a checkout run with
``PYTHONDONTWRITEBYTECODE=1`` (this machine's environment) compiles every module of ours from
source on every start, ~0.07 s of CPU that no user pays. The runs therefore write and read
bytecode in a cache of their own (``PYTHONPYCACHEPREFIX`` in the temporary folder; the warm-up
run fills it, the checkout stays clean), and ``cold_start_ephemeral_source`` reports the same
command compiling from source, as earlier reports measured it.

Definition cache: ``xflow run`` keeps the checked document of a workflow it ran
(specs/cli.md §1); here in the temporary folder, filled by the warm-up run, as a user's second
run finds it. ``cold_start_ephemeral_uncached`` is the same command with the cache off: a first
run, or a changed document.
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


def environment(cwd: Path, *, bytecode: bool, cache: bool = True) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX", "XFLOW_DEFINITION_CACHE")}
    env["PYTHONPATH"] = str(REPO)
    env["XFLOW_DEFINITION_CACHE"] = str(cwd / ".definitions") if cache else "off"
    if bytecode:
        env["PYTHONPYCACHEPREFIX"] = str(cwd / ".pycache")
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def timed(command: list[str], cwd: Path, bytecode: bool = True, cache: bool = True) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                          env=environment(cwd, bytecode=bytecode, cache=cache))
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def medians(commands: dict[str, tuple[list[str], bool, bool]], cwd: Path,
            runs_wanted: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) of each ``(command, bytecode, cache)``, the commands alternating run by
    run so that a change of the machine's load falls on all of them alike."""
    for command, bytecode, cache in commands.values():
        timed(command, cwd, bytecode, cache)  # warm the OS file cache, the bytecode and definition caches
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs_wanted):
        for name, (command, bytecode, cache) in commands.items():
            runs[name].append(timed(command, cwd, bytecode, cache))
    return {name: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r))
            for name, r in runs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    xflow = [sys.executable, str(REPO / "bin" / "xflow"), "run", str(WORKFLOW), "--input", INPUT]
    with tempfile.TemporaryDirectory(prefix="xflow-cold-") as tmp:
        cwd = Path(tmp)
        results = medians({"python": ([sys.executable, "-c", "pass"], True, True),
                           "ephemeral": ([*xflow, "--ephemeral"], True, True),
                           "uncached": ([*xflow, "--ephemeral"], True, False),
                           "source": ([*xflow, "--ephemeral"], False, True),
                           "durable": (xflow, True, True)}, cwd, runs)
    python, ephemeral, uncached, source, durable = (
        results[name] for name in ("python", "ephemeral", "uncached", "source", "durable"))
    load = os.getloadavg()[0]
    print(f"BENCH cold_start_python median_s={python[0]:.3f} cpu_s={python[1]:.3f} runs={runs} load={load:.1f}")
    print(f"BENCH cold_start_ephemeral median_s={ephemeral[0]:.3f} cpu_s={ephemeral[1]:.3f} "
          f"over_python_s={ephemeral[0] - python[0]:.3f} target_s=0.15 runs={runs} load={load:.1f}")
    print(f"BENCH cold_start_ephemeral_uncached median_s={uncached[0]:.3f} cpu_s={uncached[1]:.3f} "
          f"over_python_s={uncached[0] - python[0]:.3f} definition_cache=off runs={runs} load={load:.1f}")
    print(f"BENCH cold_start_ephemeral_source median_s={source[0]:.3f} cpu_s={source[1]:.3f} "
          f"over_python_s={source[0] - python[0]:.3f} bytecode=none runs={runs} load={load:.1f}")
    print(f"BENCH cold_start_durable median_s={durable[0]:.3f} cpu_s={durable[1]:.3f} "
          f"over_python_s={durable[0] - python[0]:.3f} store=sqlite runs={runs} load={load:.1f}")


if __name__ == "__main__":
    main()
