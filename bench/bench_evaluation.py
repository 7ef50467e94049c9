"""What bounded evaluation costs (specs/limits.md).

1. P1 (overhead per state of the in-process loop, ``bench_overhead.py``'s workflow, all of whose
   expressions are in the pure-Python subset): this tree against a baseline tree (default: the
   main checkout), each in its own process, alternated, best of several.
2. One isolated evaluation (libjq in the evaluator pool, awaited) as a ratio to the same
   evaluation by libjq in-process, for a few expressions outside the subset, on small data.
3. The loop workflow with its output filter written outside the subset (``.i += 1``), per state:
   this tree (evaluator pool) against the baseline tree (libjq in-process).

    python3 bench/bench_evaluation.py [BASELINE_TREE]      # BASELINE_TREE default /work/main

Output: one ``BENCH name key=value …`` line per measurement.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TREE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TREE))

STEPS = 4_000
ROUNDS = 3
EXPRESSIONS = {
    "select": ("[.items[] | select(.price > 10) | .name]",
               {"items": [{"name": f"n{i}", "price": i * 3} for i in range(8)]}),
    "constant": ("$CONST.limit + .n | tostring", {"n": 1}),
    "update": (".i += 1", {"i": 1, "n": 5}),
}

CHILD = """
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
from bench.bench_overhead import run_xflow
from pathlib import Path
timings = asyncio.run(run_xflow(Path(sys.argv[2]), [{"n": int(sys.argv[3])}] * 3))
print(min(timings[1:]) / (2 * int(sys.argv[3])) * 1e6)
"""


def loop_workflow(output_filter: str) -> dict[str, Any]:
    from bench.bench_overhead import loop_workflow as base

    document = base(STEPS)
    document["states"][1]["stateDataFilter"]["output"] = output_filter
    return document


def per_state_us(tree: Path, workflow: Path, iterations: int) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(workflow), str(iterations)],
                         capture_output=True, text=True, check=True, env={"PYTHONPATH": str(tree)})
    return float(out.stdout.strip().splitlines()[-1])


def compare_trees(baseline: Path, workflow: Path, iterations: int) -> tuple[float, float]:
    ours, theirs = [], []
    for _ in range(ROUNDS):  # alternated, so both see the same machine load
        ours.append(per_state_us(TREE, workflow, iterations))
        theirs.append(per_state_us(baseline, workflow, iterations))
    return min(ours), min(theirs)


async def isolated_ratio(text: str, data: Any, count: int = 400) -> tuple[float, float]:
    from xflow_runtime.expressions import compile_expression

    expression = compile_expression(text)
    variables = {"CONST": {"limit": 3}}
    program = expression._libjq("_program", path=False)  # what the in-process path ran
    payload = [data, variables["CONST"]] if expression._bound else data
    await expression.evaluate_async(data, variables)  # start the evaluator process
    best_pool = best_local = float("inf")
    for _ in range(ROUNDS):
        started = time.perf_counter()
        for _ in range(count):
            await expression.evaluate_async(data, variables)
        best_pool = min(best_pool, (time.perf_counter() - started) / count)
        started = time.perf_counter()
        for _ in range(count):
            program.input_value(payload).all()
        best_local = min(best_local, (time.perf_counter() - started) / count)
    return best_pool * 1e6, best_local * 1e6


def main() -> None:
    baseline = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/main").resolve()
    with tempfile.TemporaryDirectory(prefix="xflow-bench-") as tmp:
        fast = Path(tmp) / "fast.json"
        fast.write_text(json.dumps(loop_workflow("${ {i: (.i + 1), n: .n} }")))
        ours, theirs = compare_trees(baseline, fast, STEPS // 2)
        print(f"BENCH p1_inprocess per_state_us={ours:.1f} baseline_per_state_us={theirs:.1f} "
              f"ratio={ours / theirs:.2f} baseline={baseline}")
        for name, (text, data) in EXPRESSIONS.items():
            pool, local = asyncio.run(isolated_ratio(text, data))
            print(f"BENCH isolated_evaluation expression={name} pool_us={pool:.0f} inprocess_us={local:.0f} "
                  f"ratio={pool / local:.1f}")
        slow = Path(tmp) / "isolated.json"
        slow.write_text(json.dumps(loop_workflow("${ .i += 1 }")))
        ours, theirs = compare_trees(baseline, slow, 500)
        print(f"BENCH loop_isolated_filter per_state_us={ours:.1f} baseline_inprocess_per_state_us={theirs:.1f} "
              f"ratio={ours / theirs:.2f}")


if __name__ == "__main__":
    main()
