"""One process of the waiting-instance restart test (tests/limits/test_poison_pills.py).

``start`` starts an instance that waits for an event; ``recover`` opens a runtime, which recovers
it. Both are killed (``os._exit``) the moment the runtime logs that the instance reached its live
wait again, so no clean shutdown helps them. ``finish`` delivers the event and prints the outcome.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading

from xflow_runtime import Runtime

INSTANCE = "waiter"
reached_wait = threading.Event()


class _WaitReached(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("crash count restarted") and INSTANCE in record.getMessage():
            reached_wait.set()


async def main(mode: str, url: str, workflow: str) -> None:
    logger = logging.getLogger("xflow_runtime.engine")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(_WaitReached())
    async with Runtime("durable", database_url=url) as runtime:
        if mode == "finish":
            await runtime.send_event({"type": "go", "source": "test", "id": "go-1", "data": {"ok": True}},
                                     instance_id=INSTANCE)
            output = await asyncio.wait_for(runtime.instance(INSTANCE).result(), 60)
            print(json.dumps({"status": (await runtime.describe(INSTANCE))["status"], "output": output}))
            return
        if mode == "start":
            await runtime.start(runtime.load(workflow), {}, instance_id=INSTANCE)
        reached = await asyncio.get_running_loop().run_in_executor(None, reached_wait.wait, 60)
        print(json.dumps({"reached_wait": reached}), flush=True)
        os._exit(9)  # killed while waiting: no clean stop


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
