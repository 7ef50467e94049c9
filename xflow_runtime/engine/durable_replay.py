"""Replaying a recovered instance in the order its operations were first drawn.

DBOS numbers a workflow's operations in the order they *start* and checks, on replay, that the
operation at each number has the recorded name. Sequential code draws numbers in a fixed order,
but concurrent branches (``parallel`` states, parallel ``foreach``, a timer racing work) draw them
in the order their earlier operations *completed*, which a replay need not repeat. So while an
instance replays, every port call first waits for its turn: the next number must be the one
recorded under its name. Beyond the last recorded number (live execution) nothing waits, and
whatever order the first run takes becomes the recorded order.

Numbers with no record are "gaps": an operation in flight at the crash, a cancelled timer, or a
receive still waiting (its timeout's companion number is recorded as ``DBOS.sleep``). A gap goes
to a request whose name is not recorded later on (a receive's gap only to a receive). A number
nobody claims for a moment — a gap, or the recorded operation of work the replay cancelled sooner
than the first run did (the loser of a race) — is left unused (``DBOS.reserve_step`` without
running it): nothing recorded depends on it. History flushes are interchangeable, so the recorded
ones are performed by whichever task reaches them.

The counter is read from DBOS's workflow context (``dbos._context``), read-only.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from dbos import DBOS

from xflow_runtime.errors import XFlowError

#: Names of the operations the durable port draws (effects use the interpreter's step names).
HISTORY_STEP = "xflow.history"
RECEIVE = "DBOS.recv"
RECEIVE_TIMEOUT = "DBOS.sleep"


class ReplayDiverged(XFlowError):
    """A recovered instance asks for operations its recording does not have at that point."""


class ReplayOrder:
    POLL_SECONDS = 0.002
    #: How long a number waits for a claimant before it is left unused (a replay of recorded
    #: operations takes milliseconds; an owner still alive claims its number at once).
    GAP_GRACE_SECONDS = 0.1
    RECEIVE_GRACE_SECONDS = 1.0
    #: How long the counter may stand still while a call waits for its turn before we give up.
    STALL_SECONDS = 10.0

    def __init__(self, instance_id: str, workflow_context: Any) -> None:
        self.instance_id = instance_id
        self._context = workflow_context
        self._names: dict[int, str] | None = None
        self._last_number_of: dict[str, int] = {}
        self._last = -1
        self._loading: "asyncio.Future[dict[int, str]] | None" = None

    async def load(self) -> None:
        """Read what an earlier run recorded (once, at this run's first engine call)."""
        if self._names is not None or self._context is None:
            return
        if self._loading is None:
            self._loading = asyncio.ensure_future(self._read_recording())
        names = await asyncio.shield(self._loading)
        if self._names is None:
            self._names = names
            for number, name in names.items():
                self._last_number_of[name] = max(self._last_number_of.get(name, -1), number)
            self._last = max(names, default=-1)

    async def _read_recording(self) -> dict[int, str]:
        # Called from workflow code, DBOS would record the listing itself as an operation (and
        # replay that stale answer later). ``run_in_executor``, unlike ``to_thread``, does not
        # carry the workflow's context along, so the listing runs as a plain query.
        instance_id = self.instance_id

        def read() -> dict[int, str]:
            steps = DBOS.list_workflow_steps(instance_id, load_output=False)
            return {step["function_id"]: step["function_name"] for step in steps}

        return await asyncio.get_running_loop().run_in_executor(None, read)

    def _next(self) -> int:
        return int(self._context.function_id) + 1

    @property
    def replaying(self) -> bool:
        return self._names is not None and self._next() <= self._last

    def expected(self) -> str | None:
        """The recorded name of the next operation, while replaying."""
        return self._names.get(self._next()) if self._names is not None and self.replaying else None

    async def turn(self, name: str, flush: Callable[[], Awaitable[None]]) -> None:
        """Return when the next operation number is the one to draw for ``name``. Recorded history
        flushes met on the way are performed with ``flush``."""
        await self.load()
        if self._names is None:
            return
        position, since = -1, 0.0
        loop = asyncio.get_running_loop()
        while True:
            current = self._next()
            if current > self._last:
                return
            recorded = self._names.get(current)
            if recorded == name:
                return
            if recorded == HISTORY_STEP:
                await flush()
                continue
            if recorded is None and self._may_fill_gap(current, name):
                return
            if current != position:
                position, since = current, loop.time()
            elif loop.time() - since > self._grace(current):
                # Nobody claims this number: its operation belonged to work the replay cancelled
                # sooner than the first run did (the loser of a race), or was never recorded.
                # Leave it unused; nothing recorded depends on it.
                DBOS.reserve_step()
                continue
            elif loop.time() - since > self.STALL_SECONDS:
                raise ReplayDiverged(
                    f"instance {self.instance_id} cannot be replayed: operation {current} was recorded as "
                    f"{recorded or 'an unfinished operation'}, and no branch asks for it (waiting: {name})")
            await asyncio.sleep(self.POLL_SECONDS)

    def _may_fill_gap(self, number: int, name: str) -> bool:
        assert self._names is not None
        if self._names.get(number + 1) == RECEIVE_TIMEOUT:  # a receive waiting at the crash
            return name == RECEIVE
        return self._last_number_of.get(name, -1) < number  # an operation in flight at the crash

    def _grace(self, number: int) -> float:
        """How long a number waits for its claimant before it is left unused: longer for a
        receive still waiting at the crash (only that receive may take it)."""
        assert self._names is not None
        if number not in self._names and self._names.get(number + 1) == RECEIVE_TIMEOUT:
            return self.RECEIVE_GRACE_SECONDS
        return self.GAP_GRACE_SECONDS

    async def caught_up(self) -> None:
        """Return once every operation recorded by the earlier run has been replayed."""
        await self.load()
        while self._names is not None and int(self._context.function_id) < self._last:
            await asyncio.sleep(self.POLL_SECONDS)
