"""One status poll for every result this process waits on (specs/durability.md, "Results").

DBOS's ``handle.get_result()`` polls the instance's own status row: a front end waiting for 300
instances that run on fleet workers read 300 rows every 20 ms — 15,000 queries a second, each a
checkout and pre-ping of DBOS's pool. :class:`CompletionWatch` asks once per interval for all of
them (``DBOS.list_workflows`` with the ids and the ended statuses, nothing loaded), and hands an
ended instance to DBOS's own ``get_result``, which then reads its output once. A caller of an
unknown id learns it at the first poll, as before.

The interval starts at :data:`MIN_SECONDS` (small instances answer quickly) and doubles, up to
:data:`MAX_SECONDS`, while polls find nothing, so a front end waiting on long conversations asks a
few times a second however many it waits on. It is also never less than :data:`COST_FACTOR` times
the last poll's duration: a poll for many ids costs more (DBOS builds and decodes it in Python,
~0.75 ms + 5.5 µs per id), so waiting never takes more than a few percent of a core.
"""

from __future__ import annotations

import asyncio
import time
import weakref

from dbos import DBOS, WorkflowStatusString

MIN_SECONDS = 0.02
MAX_SECONDS = 0.1
COST_FACTOR = 25
#: Statuses after which an instance's result is final (DBOS's ``wait_first`` uses the same rule).
ENDED = [s.value for s in WorkflowStatusString if s.value not in ("PENDING", "ENQUEUED", "DELAYED")]


class UnknownWorkflow(LookupError):
    """No instance with this id exists in the durable store."""


class CompletionWatch:
    """The instances this process waits on, one poll per event loop (futures belong to a loop)."""

    def __init__(self) -> None:
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopWatch] = weakref.WeakKeyDictionary()

    async def wait(self, instance_id: str) -> None:
        """Return once ``instance_id`` has ended; :class:`UnknownWorkflow` if there is no such instance."""
        loop = asyncio.get_running_loop()
        watch = self._loops.get(loop)
        if watch is None:
            watch = self._loops[loop] = _LoopWatch()
        await watch.wait(instance_id)


class _LoopWatch:
    """The waiters of one event loop, and the one task that polls for their end."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[None]] = {}
        self._unchecked: set[str] = set()  # ids whose existence the next poll checks
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    async def wait(self, instance_id: str) -> None:
        future = self._waiting.get(instance_id)
        if future is None:
            future = self._waiting[instance_id] = asyncio.get_running_loop().create_future()
            self._unchecked.add(instance_id)
            self._wake.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="xflow-completion-watch")
        await asyncio.shield(future)  # a caller's timeout leaves the others' wait alone

    async def _run(self) -> None:
        interval = MIN_SECONDS
        while self._waiting:
            self._wake.clear()
            started = time.perf_counter()
            try:
                ended = await self._poll()
            except Exception as error:  # noqa: BLE001 - DBOS already retried connection errors
                for future in self._waiting.values():
                    if not future.done():
                        future.set_exception(error)
                self._waiting.clear()
                self._unchecked.clear()
                break
            backoff = MIN_SECONDS if ended else min(interval * 2, MAX_SECONDS)
            interval = max(backoff, COST_FACTOR * (time.perf_counter() - started))
            if not self._waiting:
                break
            try:  # a new waiter is checked soon (its first poll says whether it exists)
                await asyncio.wait_for(self._wake.wait(), interval)
                await asyncio.sleep(started + MIN_SECONDS - time.perf_counter())  # a burst: one poll
            except asyncio.TimeoutError:
                pass
        self._task = None

    async def _poll(self) -> int:
        checking, self._unchecked = self._unchecked, set()
        known: set[str] = set()
        ended: list[str] = []
        if checking:  # new ids: their rows, whatever their status (one query for all of them)
            rows = await DBOS.list_workflows_async(workflow_ids=sorted(checking), load_input=False,
                                                   load_output=False)
            known = {row.workflow_id for row in rows}
            ended += [row.workflow_id for row in rows if row.status in ENDED]
        others = [i for i in self._waiting if i not in checking]
        if others:
            rows = await DBOS.list_workflows_async(workflow_ids=others, status=ENDED, load_input=False,
                                                   load_output=False)
            ended += [row.workflow_id for row in rows]
        for instance_id in checking - known:
            self._settle(instance_id, UnknownWorkflow(instance_id))
        for instance_id in ended:
            self._settle(instance_id, None)
        return len(ended)

    def _settle(self, instance_id: str, error: Exception | None) -> None:
        future = self._waiting.pop(instance_id, None)
        if future is None or future.done():
            return
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)
