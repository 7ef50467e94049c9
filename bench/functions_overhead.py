"""Overhead of invoke_function over the bare call it wraps, measured in the same run.

    python3 bench/functions_overhead.py [--quick]

Prints one line per case: ``BENCH functions_<case> calls=… ours_us=… baseline_us=… ratio=…``.
Baselines: ``asyncio.to_thread(fn, **kwargs)`` for a sync custom function, a direct ``await fn()``
for an async one, and ``client.get(url)`` + ``response.json()`` on the same shared httpx client
for an inline REST GET against a local server.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any, Awaitable, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.functions.server import RecordingServer, Reply  # noqa: E402
from xflow_runtime.functions import FunctionContext, FunctionRegistry, HttpSettings, invoke_function  # noqa: E402
from xflow_runtime.plan.functions import compile_function_def  # noqa: E402


#: ``--quick`` checks the benchmark runs (a tenth of the calls); its figures mean nothing.
SCALE = 10 if "--quick" in sys.argv else 1


async def per_call_us(call: Callable[[], Awaitable[Any]], calls: int) -> float:
    for _ in range(min(50, calls)):  # warm caches, connections, threads
        await call()
    start = time.perf_counter()
    for _ in range(calls):
        await call()
    return (time.perf_counter() - start) / calls * 1e6


async def compare(case: str, calls: int, ours: Callable[[], Awaitable[Any]], baseline: Callable[[], Awaitable[Any]]) -> None:
    """Alternate three rounds of each and keep each side's best, so warm-up and drift cancel out."""
    ours_best = baseline_best = float("inf")
    for _ in range(3):
        ours_best = min(ours_best, await per_call_us(ours, calls))
        baseline_best = min(baseline_best, await per_call_us(baseline, calls))
    report(case, calls, ours_best, baseline_best)


def report(case: str, calls: int, ours: float, baseline: float) -> None:
    print(f"BENCH functions_{case} calls={calls} ours_us={ours:.1f} baseline_us={baseline:.1f} ratio={ours / baseline:.2f}")


async def main() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    async def add_async(a: int, b: int) -> int:
        return a + b

    registry = FunctionRegistry()
    registry.register("add", add)
    registry.register("addAsync", add_async)
    context = FunctionContext(registry=registry, http=HttpSettings(timeout=10))
    sync_fn = compile_function_def({"name": "add", "type": "custom", "operation": "add"}, {}, None)
    async_fn = compile_function_def({"name": "addAsync", "type": "custom", "operation": "addAsync"}, {}, None)
    args = {"a": 1, "b": 2}

    calls = 1000 // SCALE
    await compare("custom_sync", calls, lambda: invoke_function(sync_fn, args, context=context),
                  lambda: asyncio.to_thread(add, **args))
    calls = 10000 // SCALE
    await compare("custom_async", calls, lambda: invoke_function(async_fn, args, context=context),
                  lambda: add_async(**args))

    server = RecordingServer().start()
    server.route("GET", "/users/7", Reply(200, {"id": 7}))
    try:
        rest_fn = compile_function_def({"name": "user", "type": "rest", "metadata": {"baseUrl": server.url},
                                        "operation": {"/users": {"get": {"parameters": [{"name": "id", "in": "path"}]}}}},
                                       {}, None)
        client = context.client()

        async def raw() -> Any:
            return (await client.get(f"{server.url}/users/7")).json()

        calls = 200 // SCALE
        await compare("rest_inline_get", calls, lambda: invoke_function(rest_fn, {"id": 7}, context=context), raw)
    finally:
        await context.aclose()
        server.stop()


if __name__ == "__main__":
    asyncio.run(main())
