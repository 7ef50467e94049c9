"""The service's overhead per chat message, against calling ``Runtime`` directly in the same run.

``--sessions`` concurrent chat conversations (default 200) × ``--messages`` user messages each
(default 5), against the scripted model server with ``--latency`` seconds per LLM call (default
0.05). Two layouts, the same workflow (one ``aiagent`` state that answers and waits), both on the
durable engine with their own SQLite store:

- ``direct``: a ``Runtime("durable")`` in this process; a message is ``send_message`` followed by
  waiting for the ``agent_reply`` history record;
- ``http``: ``xflow serve --auth none`` in a subprocess; a message is ``POST
  /v1/instances/{id}/messages`` answered with the reply (httpx, one connection pool).

Printed: ``BENCH service sessions=… messages=… direct_p50_ms direct_p95_ms http_p50_ms http_p95_ms
overhead_p95_ms (= http p95 − direct p95) ratio_mean (= http mean / direct mean) errors
rss_per_waiting_kib`` (the server's resident memory growth while every conversation waits, per
conversation) ``load_avg``, and the CPU each layout spends per message (``direct_cpu_ms``: this
process minus the model server's thread; ``http_cpu_ms``: the server process), the figure a loaded
machine does not distort: ``overhead_cpu_ms`` = their difference is what the HTTP layer costs.

Run: ``python3 bench/bench_service.py [--sessions 200] [--messages 5] [--latency 0.05]``.
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
from pathlib import Path
from typing import Any

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
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def direct(folder: Path, api_base: str, sessions: int, messages: int,
                 model_thread: int) -> tuple[list[float], int, float]:
    from xflow_runtime import Runtime
    from xflow_runtime.llm import LLMSettings

    waiting: dict[str, asyncio.Queue[dict[str, Any]]] = {}

    def on_record(instance_id: str, record: dict[str, Any]) -> None:
        if record.get("event") == "agent_reply" and instance_id in waiting:
            waiting[instance_id].put_nowait(record)

    latencies: list[float] = []
    errors = 0
    ready = asyncio.Event()
    started_count = 0
    async with Runtime("durable", database_url=f"sqlite:///{folder / 'direct' / 'x.sqlite'}",
                       llm=LLMSettings(api_base=api_base), on_instance_history=on_record) as runtime:
        plan = runtime.load(folder / "chat.yaml")

        async def session(n: int) -> None:
            nonlocal errors, started_count
            instance_id = f"direct-{n}"
            waiting[instance_id] = asyncio.Queue()
            await runtime.start(plan, {"message": "hi"}, instance_id=instance_id)
            await asyncio.wait_for(waiting[instance_id].get(), 120)
            started_count += 1
            if started_count == sessions:
                ready.set()
            await ready.wait()
            for m in range(messages):
                started = time.perf_counter()
                try:
                    await runtime.send_message(instance_id, {"text": f"m{m}"})
                    await asyncio.wait_for(waiting[instance_id].get(), 120)
                    latencies.append(time.perf_counter() - started)
                except Exception:
                    errors += 1

        tasks = [asyncio.ensure_future(session(n)) for n in range(sessions)]
        await ready.wait()
        cpu_before = cpu_seconds() - cpu_seconds(thread=model_thread)
        await asyncio.gather(*tasks)
        cpu = cpu_seconds() - cpu_seconds(thread=model_thread) - cpu_before
    return latencies, errors, cpu / max(len(latencies), 1)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def over_http(folder: Path, api_base: str, sessions: int,
                    messages: int) -> tuple[list[float], int, float, float]:
    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "xflow_runtime.cli.main", "serve", "--workflows", str(folder),
                               "--db", f"sqlite:///{folder / 'http' / 'x.sqlite'}", "--port", str(port),
                               "--auth", "none", "--llm-api-base", api_base, "--log-level", "warning"],
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=str(ROOT))
    url = f"http://127.0.0.1:{port}"
    latencies: list[float] = []
    errors = 0
    try:
        # idle connections are dropped before uvicorn's keep-alive timeout (5 s) closes them: a
        # request on a connection the server is closing fails with ReadError (no retry for a POST)
        limits = httpx.Limits(max_connections=sessions, max_keepalive_connections=sessions, keepalive_expiry=4.0)
        async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
            for _ in range(600):
                try:
                    if (await client.get("/readyz")).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.5)
            # one conversation first: the first LLM call loads the provider SDK (tens of MB)
            warm = await client.post("/v1/workflows/bench-chat/instances", json={"message": "hi"},
                                     headers={"Prefer": "wait=60"})
            await client.post(f"/v1/instances/{warm.json()['id']}/messages", json={"text": "warm"})
            baseline = rss_kib(server.pid)
            ready = asyncio.Event()
            started_count = 0

            async def session(n: int) -> None:
                nonlocal errors, started_count
                response = await client.post("/v1/workflows/bench-chat/instances", json={"message": "hi"},
                                             headers={"Prefer": "wait=60"})
                instance_id = response.json()["id"]
                started_count += 1
                if started_count == sessions:
                    ready.set()
                await ready.wait()
                for m in range(messages):
                    began = time.perf_counter()
                    reply = await client.post(f"/v1/instances/{instance_id}/messages", json={"text": f"m{m}"})
                    if reply.status_code == 200 and reply.json().get("reply") == "ok":
                        latencies.append(time.perf_counter() - began)
                    else:
                        errors += 1

            tasks = [asyncio.ensure_future(session(n)) for n in range(sessions)]
            await ready.wait()
            await asyncio.sleep(1.0)
            per_waiting = (rss_kib(server.pid) - baseline) / sessions
            cpu_before = cpu_seconds(server.pid)
            await asyncio.gather(*tasks)
            cpu = cpu_seconds(server.pid) - cpu_before
    finally:
        server.terminate()
        server.wait(60)
    return latencies, errors, per_waiting, cpu / max(len(latencies), 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--messages", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from xflow_runtime.testing import ScriptedModelServer

    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as temp, ScriptedModelServer(SCRIPT, latency=args.latency) as model:
        folder = Path(temp)
        (folder / "chat.yaml").write_text(WORKFLOW)
        direct_latencies, direct_errors, direct_cpu = asyncio.run(
            direct(folder, model.api_base, args.sessions, args.messages, model.thread_native_id))
        http_latencies, http_errors, per_waiting, http_cpu = asyncio.run(
            over_http(folder, model.api_base, args.sessions, args.messages))
    print(f"BENCH service sessions={args.sessions} messages={args.messages} latency_s={args.latency} "
          f"direct_p50_ms={p(direct_latencies, 0.5):.1f} direct_p95_ms={p(direct_latencies, 0.95):.1f} "
          f"http_p50_ms={p(http_latencies, 0.5):.1f} http_p95_ms={p(http_latencies, 0.95):.1f} "
          f"overhead_p95_ms={p(http_latencies, 0.95) - p(direct_latencies, 0.95):.1f} "
          f"ratio_mean={statistics.mean(http_latencies) / statistics.mean(direct_latencies):.2f} "
          f"errors={direct_errors + http_errors} rss_per_waiting_kib={per_waiting:.0f} "
          f"direct_cpu_ms={direct_cpu * 1000:.2f} http_cpu_ms={http_cpu * 1000:.2f} "
          f"overhead_cpu_ms={(http_cpu - direct_cpu) * 1000:.2f} load_avg={load:.1f}")


if __name__ == "__main__":
    main()
