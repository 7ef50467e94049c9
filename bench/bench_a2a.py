"""Cost of reaching an A2A agent through an ``aiagentproxy`` state over the SDK doing the same
exchanges itself, measured in the same run against the same in-process agent (specs/a2a.md).

    python3 bench/bench_a2a.py [--quick]

Ours: one in-process instance of a one-state workflow (``aiagentproxy``, ``mode: blocking``):
the card fetch and the blocking ``SendMessage``, each a step, plus the outcome mapping and chat
memory of the state (each call on a short-lived HTTP client of its own, for credential isolation).
Baseline: ``a2a-sdk`` alone with one pooled HTTP client — resolve the card, create a client, send
the same message, read the task. Both on a loopback uvicorn server of the test agent. Prints
``BENCH a2a_proxy calls=… ours_ms=… baseline_ms=… ratio=… load=…``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Awaitable, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.a2a.agent_server import build_app  # noqa: E402
from tests.a2a.support import write_workflow  # noqa: E402
from tests.service.support import free_port  # noqa: E402

CALLS = 5 if "--quick" in sys.argv else 60


async def per_call_ms(call: Callable[[], Awaitable[Any]], calls: int) -> float:
    await call()  # warm: imports, connections
    start = time.perf_counter()
    for _ in range(calls):
        await call()
    return (time.perf_counter() - start) / calls * 1e3


async def main() -> None:
    import httpx
    import uvicorn
    from a2a.client import ClientConfig, create_client
    from a2a.helpers.proto_helpers import new_text_part
    from a2a.types import Message, Role, SendMessageRequest

    from xflow_runtime.runtime import Runtime

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(build_app(f"http://127.0.0.1:{port}/"), host="127.0.0.1", port=port,
                                           log_level="warning"))
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    directory = Path(tempfile.mkdtemp())
    runtime = Runtime(chat_memory=False)
    plan = runtime.load(write_workflow(directory, "bench-a2a", port, "blocking"))

    async def ours() -> None:
        output = await (await runtime.start(plan, {"request": "echo bench"})).result()
        assert output["status"] == "completed"

    http = httpx.AsyncClient(headers={"A2A-Version": "1.0"})  # the SDK's best case: one pooled client

    async def baseline() -> None:
        client = await create_client(f"http://127.0.0.1:{port}", client_config=ClientConfig(streaming=False,
                                                                                            httpx_client=http))
        request = SendMessageRequest(message=Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER,
                                                     parts=[new_text_part("echo bench")]))
        replies = [item async for item in client.send_message(request)]
        assert replies[-1].task.status.state == 3  # TASK_STATE_COMPLETED
        await client.close()

    ours_best = baseline_best = float("inf")
    for _ in range(3):  # alternate rounds, keep each side's best: warm-up and drift cancel out
        ours_best = min(ours_best, await per_call_ms(ours, CALLS))
        baseline_best = min(baseline_best, await per_call_ms(baseline, CALLS))
    await runtime.close()
    await http.aclose()
    server.should_exit = True
    await serving
    print(f"BENCH a2a_proxy calls={CALLS} ours_ms={ours_best:.2f} baseline_ms={baseline_best:.2f} "
          f"ratio={ours_best / baseline_best:.2f} load={os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    asyncio.run(main())
