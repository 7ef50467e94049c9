"""Overhead of a workflow's MCP calls over the official SDK's own calls, in the same run.

    python3 bench/bench_mcp.py [--quick] [--calls N]

For each transport (in-process, stdio subprocess, Streamable HTTP on 127.0.0.1; the 2026-07-28
revision) both sides connect once and make ``N`` ``tools/call add`` requests to the same test
server (tests/mcp/servers.py): ours is a workflow of ``N`` actions of a ``type: mcp`` function
run by the in-process engine (interpreter, recorded steps, our connection and result handling);
the baseline is ``async with Client(...)`` + ``N`` × ``client.call_tool``. Three alternating
rounds, the best of each side. Prints
``BENCH mcp_<transport> calls=… ours_us=… baseline_us=… ratio=… load=…``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from typing import Any, Awaitable, Callable

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tests.mcp.servers import build_server  # noqa: E402
from tests.mcp.support import HttpMcpServer  # noqa: E402
from xflow_runtime.engine.inprocess import run_workflow  # noqa: E402
from xflow_runtime.plan import compile_plan  # noqa: E402

ERA = "2026-07-28"


def plan_for(transport: dict[str, Any], calls: int) -> Any:
    return compile_plan({
        "id": "bench-mcp", "specVersion": "0.8", "start": "S",
        "mcpServers": [{"name": "calc", "transport": transport, "protocol": ERA, "timeout": "PT60S"}],
        "functions": [{"name": "add", "type": "mcp", "operation": "calc#add"}],
        "states": [{"name": "S", "type": "operation", "end": True, "actions": [
            {"functionRef": {"refName": "add", "arguments": {"a": i, "b": 1}}, "actionDataFilter": {"useResults": False}}
            for i in range(calls)]}],
    })


async def timed(work: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await work()
    return time.perf_counter() - start


async def compare(name: str, calls: int, ours: Callable[[], Awaitable[Any]],
                  baseline: Callable[[], Awaitable[Any]]) -> None:
    ours_best = baseline_best = float("inf")
    for _ in range(3):
        ours_best = min(ours_best, await timed(ours))
        baseline_best = min(baseline_best, await timed(baseline))
    load = os.getloadavg()[0]
    print(f"BENCH mcp_{name} calls={calls} ours_us={ours_best / calls * 1e6:.1f} "
          f"baseline_us={baseline_best / calls * 1e6:.1f} ratio={ours_best / baseline_best:.2f} load={load:.2f}",
          flush=True)


async def sdk_calls(target: Any, calls: int) -> None:
    from mcp import Client

    async with Client(target, mode=ERA, cache=None) as client:
        for i in range(calls):
            result = await client.call_tool("add", {"a": i, "b": 1})
            assert result.structured_content == {"total": i + 1}


async def workflow_calls(plan: Any, services: dict[str, Any] | None = None) -> None:
    result = await run_workflow(plan, {}, services=services, virtual_time=False)
    assert result.status == "completed", result.error


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--calls", type=int, default=None)
    args = parser.parse_args()
    calls = args.calls or (20 if args.quick else 300)
    from mcp import StdioServerParameters

    server = build_server("bench")
    in_process = plan_for({"stdio": {"command": "unused"}}, calls)
    await compare("inprocess", calls, lambda: workflow_calls(in_process, {"mcp_servers": {"calc": server}}),
                  lambda: sdk_calls(server, calls))

    command = {"command": sys.executable, "arguments": ["-m", "tests.mcp.servers"], "cwd": REPO}
    stdio = plan_for({"stdio": command}, calls)
    parameters = StdioServerParameters(command=sys.executable, args=["-m", "tests.mcp.servers"], cwd=REPO)
    await compare("stdio", calls, lambda: workflow_calls(stdio), lambda: sdk_calls(parameters, calls))

    with HttpMcpServer() as http:
        over_http = plan_for({"http": {"endpoint": http.url}}, calls)
        await compare("http", calls, lambda: workflow_calls(over_http), lambda: sdk_calls(http.url, calls))


if __name__ == "__main__":
    asyncio.run(main())
