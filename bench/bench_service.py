"""The service's overhead per chat message, against calling ``Runtime`` directly in the same run.

Two layouts, the same workflow (one ``aiagent`` state that answers and waits), both on the
durable engine with a fresh SQLite store per round, against the scripted model server (a thread
of this process) with ``--latency`` seconds per LLM call (default 0.05):

- ``direct``: a ``Runtime("durable")`` in this process; a message is ``send_message`` followed by
  waiting for the ``agent_reply`` history record;
- ``http``: ``xflow serve --auth none`` in a subprocess; a message is ``POST
  /v1/instances/{id}/messages`` answered with the reply (httpx, one connection pool, in this
  process: the client's CPU is never counted as the server's).

``--rounds`` rounds alternate the layouts (direct first in odd rounds, http first in even ones).
Each round of a layout runs two phases:

1. **closed loop**: ``--sessions`` concurrent conversations (default 200) × ``--messages`` messages
   (default 5), each sent as soon as the previous reply came. Both layouts saturate the CPU, so
   their wall times are queueing: p95(http) − p95(direct) ≈ (sessions / cores) × the CPU the
   service adds per message, and mostly measures the neighbours on a shared machine.
2. **paced**: ``--paced-sessions`` conversations (default 10) each waiting ``--think`` seconds
   (default 2.0) between a reply and its next message: ~5 messages/s, a fifth of a core at
   ~40 ms per message, a load both layouts sustain, where the latency difference is the
   service's own (20 × 1 s was not, at load 7-14: p95 of seconds in both layouts).

The overhead per message, three ways (specs/service.md, "Overhead"):

- ``server_overhead_p50_ms``/``server_overhead_p95_ms`` — **the judged figure**: per HTTP message,
  the service's ``Server-Timing`` ``app`` (the request's head reached the service → response
  started) minus ``body`` (the part until the whole body had arrived: the client's sending, and
  under load its own scheduling) minus ``runtime`` (``send_message`` → the reply record, exactly
  what the direct layout times), in the closed loop: a wall-clock time inside the server, under
  a saturated CPU including the service's share of the event loop's queue.
  ``server_overhead_with_body_p95_ms`` keeps the body's wait in;
- ``overhead_cpu_ms``: server CPU per message (the whole process: HTTP, routes, runtime, DBOS)
  minus the direct layout's CPU per message (this process minus the model server's thread),
  closed loop, the median over the paired rounds of their difference — what a loaded machine does
  not distort;
- ``paced_overhead_p95_ms``: p95(http) − p95(direct) of the client-side latency in the paced phase.

Also printed: each layout's closed-loop p50/p95, ``errors`` (both layouts, every phase) and
``rss_per_waiting_kib`` (the server's resident memory growth while every closed-loop
conversation waits, per conversation), ``load_avg`` (1-minute, at the start and the end).

Run: ``python3 bench/bench_service.py [--sessions 200] [--messages 5] [--rounds 2] [--paced-sessions 10] [--think 2]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORKFLOW = """
id: bench-chat
specVersion: '0.8'
start: talk
states:
  - name: talk
    type: aiagent
    agentName: host
    systemMessage: Be brief.
    userMessage: '${ .message }'
    output: {schema: {type: object, properties: {response: {type: string}}, required: [response]}}
    agentOutcomes:
      - finish: false
    end: true
"""
SCRIPT = {"default": {"json": {"response": "ok"}}}


def cpu_seconds(pid: int | str = "self", thread: int | None = None) -> float:
    """User + system CPU of a process (or of one of its threads), from /proc."""
    path = f"/proc/{pid}/task/{thread}/stat" if thread is not None else f"/proc/{pid}/stat"
    fields = Path(path).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def p(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


@dataclass
class Round:
    latencies: list[float] = field(default_factory=list)  # closed loop, seconds
    paced: list[float] = field(default_factory=list)      # paced phase, seconds
    server_overhead: list[float] = field(default_factory=list)  # http: Server-Timing app − body − runtime, ms
    with_body: list[float] = field(default_factory=list)  # http: Server-Timing app − runtime, ms
    errors: int = 0
    cpu_per_message: float = 0.0  # seconds, closed loop
    rss_per_waiting_kib: float = 0.0


#: One conversation: ``start()`` → a handle; ``say(handle, text)`` → True when the reply came.
Start = Callable[[], Awaitable[Any]]
Say = Callable[[Any, str], Awaitable[bool]]


async def closed_loop(result: Round, sessions: int, messages: int, start: Start, say: Say,
                      measure: Callable[[], float], on_all_waiting: Callable[[], Awaitable[None]] | None = None) -> None:
    ready = asyncio.Event()
    started_count = 0

    async def session() -> None:
        nonlocal started_count
        handle = await start()
        started_count += 1
        if started_count == sessions:
            ready.set()
        await ready.wait()
        for m in range(messages):
            began = time.perf_counter()
            if await say(handle, f"m{m}"):
                result.latencies.append(time.perf_counter() - began)
            else:
                result.errors += 1

    tasks = [asyncio.ensure_future(session()) for _ in range(sessions)]
    await ready.wait()
    if on_all_waiting is not None:
        await on_all_waiting()
    cpu_before = measure()
    count_before = len(result.latencies)
    await asyncio.gather(*tasks)
    result.cpu_per_message = (measure() - cpu_before) / max(len(result.latencies) - count_before, 1)


async def paced(result: Round, sessions: int, messages: int, think: float, start: Start, say: Say) -> None:
    async def session(n: int) -> None:
        handle = await start()
        await asyncio.sleep(think * n / max(sessions, 1))  # spread the arrivals
        for m in range(messages):
            await asyncio.sleep(think)
            began = time.perf_counter()
            if await say(handle, f"p{m}"):
                result.paced.append(time.perf_counter() - began)
            else:
                result.errors += 1

    await asyncio.gather(*(session(n) for n in range(sessions)))


async def direct(folder: Path, api_base: str, args: argparse.Namespace, model_thread: int) -> Round:
    from xflow_runtime import Runtime
    from xflow_runtime.llm import LLMSettings

    waiting: dict[str, asyncio.Queue[dict[str, Any]]] = {}

    def on_record(instance_id: str, record: dict[str, Any]) -> None:
        if record.get("event") == "agent_reply" and instance_id in waiting:
            waiting[instance_id].put_nowait(record)

    result = Round()
    folder.mkdir(parents=True)
    async with Runtime("durable", database_url=f"sqlite:///{folder / 'x.sqlite'}",
                       llm=LLMSettings(api_base=api_base), on_instance_history=on_record) as runtime:
        plan = runtime.load(folder.parent / "chat.yaml")
        counter = iter(range(1_000_000))

        async def start() -> str:
            instance_id = f"direct-{next(counter)}"
            waiting[instance_id] = asyncio.Queue()
            await runtime.start(plan, {"message": "hi"}, instance_id=instance_id)
            await asyncio.wait_for(waiting[instance_id].get(), 120)
            return instance_id

        async def say(instance_id: str, text: str) -> bool:
            try:
                await runtime.send_message(instance_id, {"text": text})
                await asyncio.wait_for(waiting[instance_id].get(), 120)
                return True
            except Exception:
                return False

        await closed_loop(result, args.sessions, args.messages, start, say,
                          lambda: cpu_seconds() - cpu_seconds(thread=model_thread))
        await paced(result, args.paced_sessions, args.messages, args.think, start, say)
    return result


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def server_overhead_ms(header: str | None, *, with_body: bool = False) -> float | None:
    """``app − body − runtime`` of a ``Server-Timing`` header, in ms (``with_body``: ``app −
    runtime``); ``None`` without ``app`` and ``runtime``."""
    durations = {}
    for metric in (header or "").split(","):
        name, *params = (part.strip() for part in metric.split(";"))
        for param in params:
            if param.startswith("dur="):
                durations[name] = float(param[4:])
    if "app" not in durations or "runtime" not in durations:
        return None
    return durations["app"] - durations["runtime"] - (0.0 if with_body else durations.get("body", 0.0))


async def over_http(folder: Path, api_base: str, args: argparse.Namespace) -> Round:
    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    folder.mkdir(parents=True)
    server = subprocess.Popen([sys.executable, "-m", "xflow_runtime.cli.main", "serve", "--workflows",
                               str(folder.parent), "--db", f"sqlite:///{folder / 'x.sqlite'}", "--port", str(port),
                               "--auth", "none", "--llm-api-base", api_base, "--log-level", "warning"],
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=str(ROOT))
    result = Round()
    try:
        # idle connections are dropped before uvicorn's keep-alive timeout (5 s) closes them: a
        # request on a connection the server is closing fails with ReadError (no retry for a POST)
        sessions = max(args.sessions, args.paced_sessions)
        limits = httpx.Limits(max_connections=sessions, max_keepalive_connections=sessions, keepalive_expiry=4.0)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=300, limits=limits) as client:
            for _ in range(600):
                try:
                    if (await client.get("/readyz")).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.5)

            async def start() -> str:
                response = await client.post("/v1/workflows/bench-chat/instances", json={"message": "hi"},
                                             headers={"Prefer": "wait=60"})
                return str(response.json()["id"])

            def say(record_overhead: bool) -> Say:
                async def send(instance_id: str, text: str) -> bool:
                    reply = await client.post(f"/v1/instances/{instance_id}/messages", json={"text": text})
                    ok = reply.status_code == 200 and reply.json().get("reply") == "ok"
                    timing = reply.headers.get("server-timing")
                    overhead, with_body = server_overhead_ms(timing), server_overhead_ms(timing, with_body=True)
                    if ok and record_overhead and overhead is not None and with_body is not None:
                        result.server_overhead.append(overhead)
                        result.with_body.append(with_body)
                    return ok
                return send

            # one conversation first: the first LLM call loads the provider SDK (tens of MB)
            await say(False)(await start(), "warm")
            baseline = rss_kib(server.pid)

            async def all_waiting() -> None:
                await asyncio.sleep(1.0)
                result.rss_per_waiting_kib = (rss_kib(server.pid) - baseline) / args.sessions

            await closed_loop(result, args.sessions, args.messages, start, say(True),
                              lambda: cpu_seconds(server.pid), all_waiting)
            await paced(result, args.paced_sessions, args.messages, args.think, start, say(False))
    finally:
        server.terminate()
        server.wait(60)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--messages", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of each layout")
    parser.add_argument("--paced-sessions", type=int, default=10)
    parser.add_argument("--think", type=float, default=2.0, help="paced phase: seconds between a reply and the next")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from xflow_runtime.testing import ScriptedModelServer

    load_start = os.getloadavg()[0]
    rounds: list[tuple[Round, Round]] = []
    with tempfile.TemporaryDirectory() as temp, ScriptedModelServer(SCRIPT, latency=args.latency) as model:
        folder = Path(temp)
        (folder / "chat.yaml").write_text(WORKFLOW)
        for n in range(args.rounds):
            layouts: dict[str, Round] = {}
            for layout in (("direct", "http") if n % 2 == 0 else ("http", "direct")):
                if layout == "direct":
                    layouts[layout] = asyncio.run(direct(folder / f"direct-{n}", model.api_base, args,
                                                         model.thread_native_id))
                else:
                    layouts[layout] = asyncio.run(over_http(folder / f"http-{n}", model.api_base, args))
                print(f"# round {n + 1} {layout}: cpu/message {layouts[layout].cpu_per_message * 1000:.2f} ms, "
                      f"load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
            rounds.append((layouts["direct"], layouts["http"]))
    load_end = os.getloadavg()[0]

    def pooled(pick: Callable[[Round], list[float]], which: int) -> list[float]:
        return [value for pair in rounds for value in pick(pair[which])]

    direct_lat, http_lat = pooled(lambda r: r.latencies, 0), pooled(lambda r: r.latencies, 1)
    direct_paced, http_paced = pooled(lambda r: r.paced, 0), pooled(lambda r: r.paced, 1)
    overheads = pooled(lambda r: r.server_overhead, 1)
    with_body = pooled(lambda r: r.with_body, 1)
    direct_cpu = statistics.median(d.cpu_per_message for d, _ in rounds)
    http_cpu = statistics.median(h.cpu_per_message for _, h in rounds)
    cpu_diff = statistics.median(h.cpu_per_message - d.cpu_per_message for d, h in rounds)
    errors = sum(d.errors + h.errors for d, h in rounds)
    print(f"BENCH service sessions={args.sessions} messages={args.messages} latency_s={args.latency} "
          f"rounds={args.rounds} "
          f"direct_p50_ms={p(direct_lat, 0.5):.1f} direct_p95_ms={p(direct_lat, 0.95):.1f} "
          f"http_p50_ms={p(http_lat, 0.5):.1f} http_p95_ms={p(http_lat, 0.95):.1f} "
          f"overhead_p95_ms={p(http_lat, 0.95) - p(direct_lat, 0.95):.1f} "
          f"ratio_mean={statistics.mean(http_lat) / statistics.mean(direct_lat):.2f} "
          f"server_overhead_p50_ms={p(overheads, 0.5) / 1000:.2f} "
          f"server_overhead_p95_ms={p(overheads, 0.95) / 1000:.2f} "
          f"server_overhead_with_body_p95_ms={p(with_body, 0.95) / 1000:.2f} "
          f"paced_sessions={args.paced_sessions} think_s={args.think} "
          f"paced_direct_p95_ms={p(direct_paced, 0.95):.1f} paced_http_p95_ms={p(http_paced, 0.95):.1f} "
          f"paced_overhead_p95_ms={p(http_paced, 0.95) - p(direct_paced, 0.95):.1f} "
          f"errors={errors} rss_per_waiting_kib={statistics.median(h.rss_per_waiting_kib for _, h in rounds):.0f} "
          f"direct_cpu_ms={direct_cpu * 1000:.2f} http_cpu_ms={http_cpu * 1000:.2f} "
          f"overhead_cpu_ms={cpu_diff * 1000:.2f} load_avg={load_start:.1f} load_avg_end={load_end:.1f}")


if __name__ == "__main__":
    main()
