"""One process of the poison-pill test: ``start`` runs the instance, ``recover`` opens a runtime
(which recovers it, as a restarted service would) and waits until it stops being PENDING."""

from __future__ import annotations

import asyncio
import json
import sys

from xflow_runtime import Runtime

INSTANCE = "poison"


async def main(mode: str, url: str, workflow: str) -> None:
    async with Runtime("durable", database_url=url) as runtime:
        if mode == "start":
            handle = await runtime.start(runtime.load(workflow), {}, instance_id=INSTANCE)
            await handle.result()
            return
        for _ in range(200):  # recovery runs in the background: the process may die meanwhile
            status = (await runtime.describe(INSTANCE))["status"]
            if status not in ("PENDING", "ENQUEUED"):
                break
            await asyncio.sleep(0.05)
        print(json.dumps({"status": status}))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
