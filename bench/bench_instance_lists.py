"""A list of instances and an event's recipients with many instances in the store: the indexed
queries (``Runtime.find_instances``, ``Runtime.event_recipients``, what ``GET /v1/instances`` and
``POST /v1/events`` run since issue 12) against what those routes did before, in the same run.

For each size N (``--sizes``, default 100 and 5000) a fresh SQLite store gets N instances waiting
for an approval event (tests/service/workflows/approval.yaml), each correlated with its own order,
three quarters of tenant ``t`` (users ``u0``..``u9``), a quarter of tenant ``other``. They are
started by one runtime and left waiting (PENDING in the store, no longer running), then a second
runtime (another executor id: it recovers none of them) measures, ``--rounds`` rounds alternating
which goes first:

- ``list``: the newest 50 of tenant ``t`` — *before*: every instance read with
  ``list_instances(limit=None)``, filtered, sorted and cut in Python (the old route); *after*: one
  ``find_instances`` page;
- ``event``: the instances an event for one order reaches — *before*: every PENDING/ENQUEUED
  instance read and its correlation checked in Python; *after*: ``event_recipients``;
- ``running``: ``GET /v1/instances?status=running`` (newest 50 of tenant ``t``) while the hub has seen
  the newest 90% of its instances answer (as many waiting conversations) — *before*: every
  not-yet-final row read until the page is full (``service/listing.py`` with ``max_ids=0``, the
  fallback and the route before); *after*: those the hub knows wait left out by the query;
- ``metrics``: the instance gauge of ``GET /metrics`` (every instance by the status it shows) —
  *before*: up to 10,000 instances read with ``list_instances`` and ``status_of`` counted in Python
  (the old route); *after*: ``ServiceState.instances_by_status`` (aggregates in the database).

CPU time of this process per call (SQLite runs in it, so the database's work is counted; the
median of the rounds), wall time beside it, and the 1-minute load average. The figure is the
ratio before/after at the largest N, and how each grows from the smallest N to the largest.

Then the routes themselves: ``xflow serve --auth none`` on the same store (tenant ``default``),
``GET /v1/instances?limit=50``, ``POST /v1/events`` (a new event id each time, for one order:
one recipient, which is not running, so the event is stored for it) and ``GET /metrics`` through httpx; the server's
CPU per request (``/proc``, all its threads) and the client's median wall time. Only *after*: the
server runs this version; their growth from the smallest N to the largest is the figure.

Run: ``python3 bench/bench_instance_lists.py [--sizes 100,5000] [--rounds 5] [--calls 20]``;
``--quick``: sizes 20 and 200, 2 rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from xflow_runtime.engine.durable.instance_keys import InstanceQuery, correlates  # noqa: E402
from xflow_runtime.runtime import Runtime  # noqa: E402

PAGE = 50
KINDS = ("list", "event", "metrics")
TENANT = "default"  # the tenant of ``--auth none``
#: Waits for an approval correlated by order id; not started by the event (its start state is not
#: an event state), so posting events starts nothing.
WORKFLOW = """id: approval
version: '1.0'
specVersion: '0.8'
start: begin
events:
  - name: Approval
    type: order.approval
    source: /approvals
    correlation:
      - contextAttributeName: orderid
states:
  - name: begin
    type: inject
    data: {}
    transition: await
  - name: await
    type: event
    onEvents:
      - eventRefs: [Approval]
    end: true
"""
TICKS = os.sysconf("SC_CLK_TCK")


def event_for(order: str) -> dict[str, Any]:
    return {"specversion": "1.0", "id": f"e-{order}", "source": "/approvals", "type": "order.approval",
            "orderid": order, "data": {"ok": True}}


async def fill(url: str, workflow: Path, count: int) -> None:
    async with Runtime("durable", database_url=url, executor_id="bench-writer") as runtime:
        plan = runtime.load(workflow)
        for i in range(count):
            tenant = "other" if i % 4 == 3 else TENANT
            await runtime.start(plan, {"order": f"o-{i}"}, tenant=tenant, user=f"u{i % 10}",
                                labels={"correlation.orderid": f"o-{i}"})


async def list_before(runtime: Runtime) -> int:
    rows = [r for r in await runtime.list_instances(limit=None) if r.get("tenant") == TENANT]
    rows.sort(key=lambda r: (r.get("created_at") or 0.0, r["instance_id"]), reverse=True)
    return len(rows[:PAGE + 1])


async def list_after(runtime: Runtime) -> int:
    return len(await runtime.find_instances(InstanceQuery(tenant=TENANT, limit=PAGE + 1)))


def event_before(order: str) -> Callable[[Runtime], Awaitable[int]]:
    async def run(runtime: Runtime) -> int:
        event = event_for(order)
        return sum(1 for r in await runtime.list_instances(limit=None, status=["PENDING", "ENQUEUED"])
                   if r.get("tenant") == TENANT and correlates(r.get("labels") or {}, event))
    return run


def event_after(order: str) -> Callable[[Runtime], Awaitable[int]]:
    async def run(runtime: Runtime) -> int:
        return len(await runtime.event_recipients(event_for(order), tenant=TENANT))
    return run


def _state(runtime: Runtime, waiting: list[str] = []) -> Any:  # noqa: B006 - read only
    """What the metrics and list routes read: the runtime and a hub that saw ``waiting`` answer
    (an agent reply each); the other fields are unused."""
    from xflow_runtime.service.live import LiveHub
    from xflow_runtime.service.state import ServiceState

    hub = LiveHub()
    for instance_id in waiting:
        hub.record(instance_id, {"seq": 0, "event": "agent_reply"})
    return ServiceState(runtime=runtime, catalog=None, auth=None, hub=hub, metrics=None,  # type: ignore[arg-type]
                        options=None)  # type: ignore[arg-type]


def running_list(state: Any, max_ids: int | None) -> Callable[[Runtime], Awaitable[int]]:
    """The newest page of tenant ``t``'s running instances, as ``GET /v1/instances?status=running``."""
    from xflow_runtime.service.listing import MAX_IDS, list_page
    from xflow_runtime.service.principal import Principal

    filters = {"status": "running", "user": None, "workflow": None, "started_after": None, "started_before": None}

    async def run(runtime: Runtime) -> int:
        items, _ = await list_page(state, Principal(TENANT, None, "service"), filters, None, PAGE, "",
                                   MAX_IDS if max_ids is None else max_ids)
        return len(items)
    return run


async def metrics_before(runtime: Runtime) -> int:
    from collections import Counter

    from xflow_runtime.service.views import status_of

    hub = _state(runtime).hub
    counts = Counter(status_of(r, hub.last_event(r["instance_id"])) for r in await runtime.list_instances(limit=10_000))
    return sum(counts.values())


async def metrics_after(runtime: Runtime) -> int:
    return sum((await _state(runtime).instances_by_status()).values())


async def timed(runtime: Runtime, call: Callable[[Runtime], Awaitable[int]], calls: int) -> tuple[float, float, int]:
    """(CPU ms, wall ms) per call, and the answer's size."""
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(calls):
        size = await call(runtime)
    return ((time.process_time() - cpu) * 1000 / calls, (time.perf_counter() - wall) * 1000 / calls, size)


async def measure(url: str, workflow: Path, count: int, rounds: int, calls: int) -> dict[str, float]:
    await fill(url, workflow, count)
    order = "o-0"  # tenant default
    async with Runtime("durable", database_url=url, executor_id="bench-reader") as runtime:
        newest = [r["instance_id"] for r in await runtime.find_instances(InstanceQuery(tenant=TENANT, limit=count))]
        answered = _state(runtime, newest[:len(newest) * 9 // 10])
        pairs = {"list": (list_before, list_after), "event": (event_before(order), event_after(order)),
                 "running": (running_list(answered, 0), running_list(answered, None)),
                 "metrics": (metrics_before, metrics_after)}
        samples: dict[str, list[float]] = {f"{k}_{w}_{m}": [] for k in pairs for w in ("before", "after")
                                           for m in ("cpu", "wall")}
        for kind, (before, after) in pairs.items():
            sizes = {(await before(runtime)), (await after(runtime))}  # warm, and the same answer
            assert len(sizes) == 1, (kind, sizes)
        for r in range(rounds):
            for kind, (before, after) in pairs.items():
                ordered = [("before", before), ("after", after)]
                for which, call in (ordered if r % 2 == 0 else ordered[::-1]):
                    cpu, wall, _ = await timed(runtime, call, max(1, calls // (10 if which == "before" and count > 1000 else 1)))
                    samples[f"{kind}_{which}_cpu"].append(cpu)
                    samples[f"{kind}_{which}_wall"].append(wall)
    return {key: statistics.median(values) for key, values in samples.items()}


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def measure_http(url: str, workflows: Path, rounds: int, calls: int) -> dict[str, float]:
    """Server CPU ms and client wall ms per request of each route (medians over rounds)."""
    import httpx

    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "xflow_runtime.cli.main", "serve", "--workflows", str(workflows),
                               "--db", url, "--port", str(port), "--auth", "none", "--log-level", "warning"],
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples: dict[str, list[float]] = {f"{k}_{m}": [] for k in KINDS for m in ("cpu", "wall")}
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
            deadline = time.monotonic() + 300
            while True:
                try:
                    if client.get("/readyz").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("xflow serve did not become ready")
                time.sleep(0.2)
            sent = 0

            def list_once() -> None:
                assert len(client.get("/v1/instances", params={"limit": PAGE}).json()["items"]) > 0

            def event_once() -> None:
                nonlocal sent
                sent += 1
                body = client.post("/v1/events", content=json.dumps({**event_for("o-0"), "id": f"h-{sent}"}),
                                   headers={"content-type": "application/cloudevents+json"}).json()
                assert body["delivered_to"] == 1, body

            def metrics_once() -> None:
                assert 'xflow_instances{status="running"}' in client.get("/metrics").text

            calls_of = {"list": list_once, "event": event_once, "metrics": metrics_once}
            for call in calls_of.values():
                call()  # warm
            for r in range(rounds):
                for kind in (KINDS if r % 2 == 0 else KINDS[::-1]):
                    cpu, walls = _cpu_seconds(server.pid), []
                    for _ in range(calls):
                        started = time.perf_counter()
                        calls_of[kind]()
                        walls.append(time.perf_counter() - started)
                    samples[f"{kind}_cpu"].append((_cpu_seconds(server.pid) - cpu) * 1000 / calls)
                    samples[f"{kind}_wall"].append(statistics.median(walls) * 1000)
    finally:
        server.terminate()
        server.wait(60)
    return {key: statistics.median(values) for key, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,5000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sizes = [20, 200] if args.quick else [int(s) for s in args.sizes.split(",")]
    rounds = 2 if args.quick else args.rounds
    results, served = {}, {}
    with tempfile.TemporaryDirectory(prefix="xflow-lists-") as directory:
        workflows = Path(directory) / "workflows"
        workflows.mkdir()
        (workflows / "approval.yaml").write_text(WORKFLOW)
        for count in sizes:
            load = os.getloadavg()[0]
            url = f"sqlite:///{directory}/n{count}/xflow.sqlite"
            figures = asyncio.run(measure(url, workflows / "approval.yaml", count, rounds, args.calls))
            results[count] = figures
            fields = " ".join(f"{k}_ms={v:.3f}" for k, v in figures.items())
            print(f"BENCH lists_n{count} instances={count} {fields} load={load:.1f} "
                  f"load_end={os.getloadavg()[0]:.1f}", flush=True)
            served[count] = measure_http(url, workflows, rounds, args.calls * 3)  # CPU ticks are 10 ms
            fields = " ".join(f"{k}_ms={v:.3f}" for k, v in served[count].items())
            print(f"BENCH lists_http_n{count} instances={count} {fields} load={os.getloadavg()[0]:.1f}", flush=True)
    for kind in KINDS:
        print(f"BENCH lists_http_{kind} instances={sizes[-1]} small={sizes[0]} "
              f"server_cpu_ms={served[sizes[-1]][f'{kind}_cpu']:.3f} small_cpu_ms={served[sizes[0]][f'{kind}_cpu']:.3f} "
              f"growth={served[sizes[-1]][f'{kind}_cpu'] / served[sizes[0]][f'{kind}_cpu']:.2f} "
              f"wall_ms={served[sizes[-1]][f'{kind}_wall']:.3f} small_wall_ms={served[sizes[0]][f'{kind}_wall']:.3f} "
              f"load={os.getloadavg()[0]:.1f}", flush=True)
    small, large = results[sizes[0]], results[sizes[-1]]
    for kind in (*KINDS, "running"):
        print(f"BENCH lists_{kind} instances={sizes[-1]} small={sizes[0]} "
              f"after_cpu_ms={large[f'{kind}_after_cpu']:.3f} before_cpu_ms={large[f'{kind}_before_cpu']:.3f} "
              f"ratio={large[f'{kind}_before_cpu'] / large[f'{kind}_after_cpu']:.1f} "
              f"after_growth={large[f'{kind}_after_cpu'] / small[f'{kind}_after_cpu']:.2f} "
              f"before_growth={large[f'{kind}_before_cpu'] / small[f'{kind}_before_cpu']:.2f} "
              f"load={os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
