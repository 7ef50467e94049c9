"""BENCH validate_startup: wall time of a cold ``xflow validate FILE`` vs ``python -c pass``.

Each run is a fresh interpreter, so this measures what a user or a CI step waits for: imports
(yaml, jsonschema, jq, the plan package — never litellm/DBOS/SQLAlchemy), schema loading and the
check itself, on a small valid workflow.

    python3 bench/bench_validate_startup.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = """\
id: hello
specVersion: "0.8"
functions:
  - name: greet
    type: custom
    operation: python:hello:greet
states:
  - name: Greet
    type: operation
    actions:
      - functionRef: {refName: greet, arguments: {who: "${ .name }"}}
        actionDataFilter: {toStateData: .greeting}
    transition: Done
  - name: Done
    type: inject
    data: {ok: true}
    end: true
"""


def wall_and_cpu_ms(command: list[str], repeat: int) -> tuple[float, float]:
    """Medians of wall time and of the child's CPU time (user + system, less load-sensitive)."""
    times, cpu = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
        times.append((time.perf_counter() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
        assert result.returncode == 0, result.stdout + result.stderr
    return statistics.median(times), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "hello.yaml"
        path.write_text(WORKFLOW)
        python, python_cpu = wall_and_cpu_ms([sys.executable, "-c", "pass"], args.repeat)
        validate, validate_cpu = wall_and_cpu_ms([sys.executable, str(REPO / "bin" / "xflow"), "validate", str(path)],
                                                 args.repeat)
    print(f"BENCH validate_startup validate_ms={validate:.0f} python_pass_ms={python:.0f} "
          f"ratio={validate / python:.1f} validate_cpu_ms={validate_cpu:.0f} python_pass_cpu_ms={python_cpu:.0f} "
          f"cpu_ratio={validate_cpu / python_cpu:.1f} repeat={args.repeat} load={os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
