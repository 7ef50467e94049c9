"""Many conversations waiting for a user message on a fleet worker: memory per waiting conversation,
and the time a restarted fleet takes to be ready again (specs/deployment.md, specs/performance.md §7).

A fresh PostgreSQL (pgserver), the scripted model server, one ``xflow worker`` (``--concurrency``
above the count: a waiting instance holds a slot). A front end in this process starts
``--conversations`` chat instances (bench_service's agent: it answers, then waits for the next user
message) and waits until every one has recorded its first reply. Then:

- ``worker_rss_kib_per_waiting``: the worker's resident memory growth (from after its warm-up) per
  waiting conversation; ``pg_kib_per_waiting``: the database's growth (``pg_database_size``) per
  conversation;
- the worker is stopped (SIGTERM: its instances are handed back at once) and a new one started:
  ``restart_ready_s`` runs from the new worker's launch until a message sent to the *last*
  conversation gets its reply (every instance is taken over and replayed to its wait first, in
  start order at best); ``restart_claimed_s``: until every instance is claimed by the new worker;
  ``worker_start_s``: the part of both that is the new process starting (imports, litellm, DBOS
  launch) before it prints its ready line; ``restart_cpu_ms_per_conversation``: the new worker's
  CPU from its ready line to the reply, per conversation (the replay of each to its wait).

Run: ``python3 bench/bench_fleet_waiting.py [--conversations 10000]``; ``--quick``: 100.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_fleet import _cpu_seconds, model_and_postgres, start_worker  # noqa: E402
from bench_service import WORKFLOW, rss_kib  # noqa: E402

SCRIPT = "default:\n  json: {response: ok}\n"


def _sql(url: str, statement: str) -> Any:
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as connection:
        return connection.execute(statement).fetchone()[0]


def _replied(url: str) -> int:
    """Instances whose history holds at least one agent reply."""
    return int(_sql(url, "SELECT count(DISTINCT workflow_uuid) FROM dbos.streams "
                         "WHERE value LIKE '%agent_reply%'"))


def _claimed_by_others(url: str, executor_prefix_not: str) -> int:
    return int(_sql(url, "SELECT count(*) FROM dbos.workflow_status WHERE name = 'xflow.instance' AND "
                         f"status = 'PENDING' AND executor_id <> '{executor_prefix_not}'"))


async def _replies(runtime: Any, instance_id: str) -> int:
    return sum(1 for record in await runtime.history(instance_id) if record.get("event") == "agent_reply")


async def run(url: str, api_base: str, workflow: Path, count: int) -> dict[str, float]:
    from xflow_runtime.engine.fleet_options import FleetOptions
    from xflow_runtime.llm.client import LLMSettings
    from xflow_runtime.runtime import Runtime

    worker = start_worker(url, api_base, count + 10)
    async with Runtime("durable", database_url=url, fleet=FleetOptions(run_instances=False),
                       llm=LLMSettings(api_base=api_base, api_key="x")) as runtime:
        plan = runtime.load(workflow)
        await runtime.start(plan, {"message": "hi"}, instance_id="warm")  # the provider SDK, the pools
        while await asyncio.to_thread(_replied, url) < 1:
            await asyncio.sleep(0.2)
        await asyncio.sleep(1.0)
        rss_before, db_before = rss_kib(worker.pid), await asyncio.to_thread(
            _sql, url, "SELECT pg_database_size(current_database())")
        ids = [f"chat-{k:05d}" for k in range(count)]
        for chunk in range(0, count, 200):
            await asyncio.gather(*(runtime.start(plan, {"message": "hi"}, instance_id=i)
                                   for i in ids[chunk:chunk + 200]))
        while await asyncio.to_thread(_replied, url) < count + 1:
            await asyncio.sleep(0.5)
        await asyncio.sleep(1.0)
        rss_per = (rss_kib(worker.pid) - rss_before) / count
        db_per = (await asyncio.to_thread(_sql, url, "SELECT pg_database_size(current_database())")
                  - db_before) / 1024 / count
        worker.terminate()
        worker.wait(120)
        old_executor = await asyncio.to_thread(
            _sql, url, "SELECT executor_id FROM xflow_workers ORDER BY started_at DESC LIMIT 1")
        launched = time.perf_counter()
        worker = start_worker(url, api_base, count + 10)
        started_s = time.perf_counter() - launched
        cpu_before = _cpu_seconds(worker.pid)
        try:
            await runtime.send_message(ids[-1], {"text": "are you back?"})
            claimed_s = None
            while await _replies(runtime, ids[-1]) < 2:
                if claimed_s is None and await asyncio.to_thread(_claimed_by_others, url, old_executor) >= count:
                    claimed_s = time.perf_counter() - launched
                await asyncio.sleep(0.1)
            ready_s = time.perf_counter() - launched
            while claimed_s is None:
                if await asyncio.to_thread(_claimed_by_others, url, old_executor) >= count:
                    claimed_s = time.perf_counter() - launched
                await asyncio.sleep(0.1)
            recovery_cpu = _cpu_seconds(worker.pid) - cpu_before
        finally:
            worker.terminate()
            worker.wait(120)
    return {"rss": rss_per, "db": db_per, "ready": ready_s, "claimed": claimed_s, "cpu": recovery_cpu,
            "started": started_s}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    count = 100 if args.quick else args.conversations
    with model_and_postgres("xflow-bench-waiting-", SCRIPT, WORKFLOW, 0.05) as parts:
        import psycopg

        with psycopg.connect(parts.server.get_uri(), autocommit=True) as connection:
            connection.execute("CREATE DATABASE waiting")
        load = os.getloadavg()[0]
        result = asyncio.run(run(parts.server.get_uri(database="waiting", driver="psycopg"), parts.api_base,
                                 parts.workflow, count))
        print(f"BENCH fleet_waiting conversations={count} worker_rss_kib_per_waiting={result['rss']:.1f} "
              f"pg_kib_per_waiting={result['db']:.1f} restart_ready_s={result['ready']:.2f} "
              f"restart_claimed_s={result['claimed']:.2f} "
              f"worker_start_s={result['started']:.2f} restart_worker_cpu_s={result['cpu']:.2f} "
              f"restart_cpu_ms_per_conversation={result['cpu'] / count * 1000:.2f} "
              f"cores={os.cpu_count()} load_avg={load:.1f}", flush=True)

if __name__ == "__main__":
    main()
