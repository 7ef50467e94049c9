"""The durable engine on a real DBOS system database (SQLite file; PostgreSQL where marked).

The bodies here are small hand-written coroutines over the engine port, so these tests pin the
engine's contract independently of the interpreter.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import pytest

from xflow_runtime.engine.durable import DurableEngine, DurablePort, local_wake, resolve_database_url
from xflow_runtime.engine.port import EnginePort
from xflow_runtime.errors import WorkflowError
from xflow_runtime.history import HistoryBuffer

Body = Callable[[dict[str, Any], DurablePort], Any]


class Counter:
    """Counts how many times each effect really ran (replayed steps must not run)."""

    def __init__(self) -> None:
        self.runs: dict[str, int] = {}

    def effect(self, name: str, value: Any) -> Callable[[], Any]:
        async def run() -> Any:
            self.runs[name] = self.runs.get(name, 0) + 1
            return value

        return run


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'system.sqlite'}"


@pytest.fixture
async def launch() -> AsyncIterator[Callable[..., DurableEngine]]:
    engines: list[DurableEngine] = []

    def start(url: str, body: Body, executor_id: str = "local") -> DurableEngine:
        for engine in engines:
            engine.shutdown()
        engine = DurableEngine(url, executor_id=executor_id)
        engine.launch(body)
        engines.append(engine)
        return engine

    yield start
    for engine in engines:
        engine.shutdown()


def test_the_port_is_the_engine_port() -> None:
    assert isinstance(DurablePort("x"), EnginePort)


async def test_steps_are_recorded_in_order_with_their_results(launch, database_url) -> None:
    counter = Counter()

    async def body(request: dict[str, Any], port: DurablePort) -> Any:
        return [await port.run_step(f"step-{i}", counter.effect(f"step-{i}", i * i))
                for i in range(request["n"])]

    engine = launch(database_url, body)
    await engine.start("steps", {"n": 4})
    assert await engine.result("steps") == [0, 1, 4, 9]
    steps = await engine.steps("steps")
    # Each name carries the call's place: its scope (the root, "") and its number in that scope.
    assert [s["function_name"] for s in steps] == ["step-0 @#0", "step-1 @#1", "step-2 @#2", "step-3 @#3"]
    assert [s["output"] for s in steps] == [0, 1, 4, 9]


async def test_starting_twice_with_one_id_runs_one_instance(launch, database_url) -> None:
    counter = Counter()

    async def body(request: dict[str, Any], port: DurablePort) -> Any:
        return await port.run_step("only", counter.effect("only", request["v"]))

    engine = launch(database_url, body)
    await engine.start("same", {"v": 1})
    await engine.start("same", {"v": 1})
    assert await engine.result("same") == 1
    assert counter.runs == {"only": 1}
    assert len(await engine.list()) == 1


async def test_a_recovered_instance_does_not_rerun_completed_steps(launch, database_url) -> None:
    counter = Counter()

    async def body(request: dict[str, Any], port: DurablePort) -> Any:
        port.history = HistoryBuffer()
        port.history({"event": "before"})
        first = await port.run_step("before", counter.effect("before", "a"))
        event = await port.wait_event("go", None)
        port.history({"event": "after"})
        second = await port.run_step("after", counter.effect("after", "b"))
        await port.flush()
        return [first, event, second]

    engine = launch(database_url, body)
    await engine.start("crashy", {})
    await _until(lambda: counter.runs.get("before") == 1)
    await asyncio.sleep(0.1)  # let the step's checkpoint commit
    # The process "dies" while the instance waits: DBOS is torn down, the instance stays PENDING.
    engine.shutdown()
    engine = launch(database_url, body)  # same executor id: DBOS recovers it at launch
    await engine.send("crashy", "go", "event")
    assert await engine.result("crashy") == ["a", "event", "b"]
    assert counter.runs == {"before": 1, "after": 1}
    assert [(r["seq"], r["event"]) for r in await engine.history("crashy")] == [(0, "before"), (1, "after")]


async def test_recv_times_out_with_none_and_keeps_events_sent_before_the_wait(launch, database_url) -> None:
    async def body(request: dict[str, Any], port: DurablePort) -> Any:
        await port.sleep(0.3)  # the events below are sent while the instance sleeps
        first = await port.wait_event("order", 5)
        second = await port.wait_event("order", 5)
        nothing = await port.wait_event("order", 0.2)
        null_payload = await port.wait_event("nulls", 5)
        return [first, second, nothing, null_payload]

    engine = launch(database_url, body)
    await engine.start("events", {})
    await engine.send("events", "order", {"n": 1})
    await engine.send("events", "order", {"n": 2})
    await engine.send("events", "nulls", None)
    assert await engine.result("events") == [{"n": 1}, {"n": 2}, None, None]
    names = [s["function_name"] for s in await engine.steps("events")]
    assert names.count("DBOS.recv") == 4


async def test_a_duplicate_event_id_is_delivered_once(launch, database_url) -> None:
    async def body(request: dict[str, Any], port: DurablePort) -> Any:
        return [await port.wait_event("t", 1.0), await port.wait_event("t", 0.3)]

    engine = launch(database_url, body)
    await engine.start("dedup", {})
    await engine.send("dedup", "t", "once", idempotency_key="event-1")
    await engine.send("dedup", "t", "once", idempotency_key="event-1")
    assert await engine.result("dedup") == ["once", None]


async def test_a_durable_sleep_keeps_its_wake_up_time_across_a_restart(launch, database_url) -> None:
    async def body(request: dict[str, Any], port: DurablePort) -> Any:
        await port.sleep(1.0)
        return "woke"

    engine = launch(database_url, body)
    started = time.time()
    await engine.start("sleeper", {})
    await _until(lambda: _has_step(database_url, "sleeper"))
    engine.shutdown()
    engine = launch(database_url, body)
    assert await engine.result("sleeper") == "woke"
    assert time.time() - started >= 1.0
    names = [s["function_name"] for s in await engine.steps("sleeper")]
    # One clock reading (the wake-up time, reused by the recovery) and one fired timer.
    assert names == ["xflow.timer @#0", "xflow.sleep @#0"]


async def test_now_and_new_id_are_recorded(launch, database_url) -> None:
    async def body(request: dict[str, Any], port: DurablePort) -> Any:
        stamp, ident = await port.now(), await port.new_id()
        await port.wait_event("go", None)
        return [stamp, ident]

    engine = launch(database_url, body)
    await engine.start("clock", {})
    await _until(lambda: _has_step(database_url, "clock", count=2))
    before = [s["output"] for s in await engine.steps("clock")][:2]
    engine.shutdown()
    engine = launch(database_url, body)
    await engine.send("clock", "go", 1)
    assert await engine.result("clock") == before


async def test_a_failed_step_is_recorded_and_raised_again_on_replay(launch, database_url) -> None:
    runs: list[str] = []

    class Unpicklable(Exception):
        def __init__(self, message: str, handle: Any) -> None:
            super().__init__(message)
            self.handle = handle

        def __reduce__(self):  # like exceptions holding sockets or locks
            raise TypeError("cannot pickle")

    async def failing() -> Any:
        runs.append("fail")
        raise Unpicklable("backend exploded", object())

    async def body(request: dict[str, Any], port: DurablePort) -> Any:
        try:
            await port.run_step("boom", failing)
        except WorkflowError as error:
            caught = {"code": error.code, "message": str(error)}
        await port.wait_event("go", None)
        return caught

    engine = launch(database_url, body)
    await engine.start("failing", {})
    await _until(lambda: runs == ["fail"])
    await asyncio.sleep(0.1)
    engine.shutdown()
    engine = launch(database_url, body)
    await engine.send("failing", "go", 1)
    assert await engine.result("failing") == {"code": "Unpicklable", "message": "backend exploded"}
    assert runs == ["fail"]


def test_the_default_store_is_sqlite_under_dot_xflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("XFLOW_DATABASE_URL", raising=False)
    assert resolve_database_url(None) == f"sqlite:///{tmp_path / '.xflow' / 'xflow.sqlite'}"
    assert (tmp_path / ".xflow").is_dir()
    monkeypatch.setenv("XFLOW_DATABASE_URL", "postgres://u:p@h/db")
    assert resolve_database_url(None) == "postgresql://u:p@h/db"


async def test_an_instance_runs_on_the_default_sqlite_store(launch, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("XFLOW_DATABASE_URL", raising=False)

    async def body(request: dict[str, Any], port: DurablePort) -> Any:
        return await port.run_step("one", Counter().effect("one", 1))

    engine = launch(None, body)
    await engine.start("default-store", {})
    assert await engine.result("default-store") == 1
    assert (tmp_path / ".xflow" / "xflow.sqlite").stat().st_size > 0


@pytest.mark.postgres
async def test_the_same_engine_runs_on_postgresql(launch, postgres_database_url: str) -> None:
    counter = Counter()

    async def body(request: dict[str, Any], port: DurablePort) -> Any:
        port.history = HistoryBuffer(clock=lambda: 0.0)
        value = await port.run_step("pg", counter.effect("pg", 7))
        event = await port.wait_event("go", None)
        port.history({"event": "done"})
        await port.flush()
        return [value, event]

    engine = launch(postgres_database_url, body)
    await engine.start("on-pg", {})
    await _until(lambda: counter.runs.get("pg") == 1)
    await asyncio.sleep(0.1)
    engine.shutdown()
    engine = launch(postgres_database_url, body)
    await engine.send("on-pg", "go", "x")
    assert await engine.result("on-pg") == [7, "x"]
    assert counter.runs == {"pg": 1}
    assert await engine.history("on-pg") == [{"seq": 0, "at": 0.0, "event": "done"}]


async def _until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


def _has_step(database_url: str, instance_id: str, count: int = 1) -> bool:
    """Whether ``count`` operations of the instance are checkpointed (read with sqlite3 directly,
    so the check does not go through the engine under test)."""
    import sqlite3

    path = database_url[len("sqlite:///"):]
    with sqlite3.connect(path) as connection:
        try:
            (found,) = connection.execute(
                "SELECT count(*) FROM operation_outputs WHERE workflow_uuid = ?", (instance_id,)).fetchone()
        except sqlite3.OperationalError:
            return False
    return found >= count


async def test_a_cancelled_instance_is_a_clear_error(launch, database_url) -> None:
    from dbos import DBOS

    from xflow_runtime.engine.durable import DurableEngineError

    async def body(request: dict[str, Any], port: DurablePort) -> Any:
        return await port.wait_event("never", None)

    engine = launch(database_url, body)
    await engine.start("cancelled", {})
    await DBOS.cancel_workflow_async("cancelled")
    with pytest.raises(DurableEngineError, match="instance cancelled"):
        await engine.result("cancelled")


async def test_a_message_sent_from_this_process_wakes_its_receiver_without_the_poller(
        launch, database_url, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite has no push: DBOS's listener re-reads every waiting receive at an interval. A message
    sent by this process wakes its receiver at once instead (engine/durable/local_wake.py); with the
    poller set to an hour, the instance still gets its event (DBOS's own fallback re-check is 60 s)."""
    monkeypatch.setenv("XFLOW_SQLITE_POLL_SECONDS", "3600")

    async def body(request: dict[str, Any], port: DurablePort) -> Any:
        return await port.wait_event("t", 600)

    engine = launch(database_url, body)
    await engine.start("woken", {})
    for _ in range(600):  # until the instance waits (its receive marker is recorded)
        if any(s["function_name"].startswith("xflow.receive") for s in await engine.steps("woken")):
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.2)  # the receive's setup (its database check) is done by then
    await engine.send("woken", "t", {"n": 1})
    assert await asyncio.wait_for(engine.result("woken"), 30) == {"n": 1}


async def test_the_sqlite_listener_polls_slowly_only_while_many_receives_wait(launch, database_url) -> None:
    """DBOS's close joins its SQLite listener, which sleeps out its interval: a one-second poll
    would add up to a second to every ``xflow run``. So it polls every 50 ms while few receives
    wait in the process, and every second (a transaction per waiting receive each time) beyond
    (engine/durable/local_wake.py)."""
    from dbos._dbos import _get_dbos_instance

    async def body(request: dict[str, Any], port: DurablePort) -> Any:
        return await port.wait_event("t", 600)

    engine = launch(database_url, body)
    system_db = _get_dbos_instance()._sys_db

    def interval() -> float:
        return system_db._notification_listener_polling_interval_sec

    assert interval() == local_wake.SQLITE_FEW_WAITING_POLL_SECONDS
    many = local_wake.FEW_WAITING + 1
    for k in range(many):
        await engine.start(f"waiting-{k}", {})
    for _ in range(600):
        if interval() == local_wake.SQLITE_POLL_SECONDS:
            break
        await asyncio.sleep(0.05)
    assert interval() == local_wake.SQLITE_POLL_SECONDS
    for k in range(many):
        await engine.send(f"waiting-{k}", "t", {"n": k})
    assert [await asyncio.wait_for(engine.result(f"waiting-{k}"), 30) for k in range(many)] == [
        {"n": k} for k in range(many)]
    assert interval() == local_wake.SQLITE_FEW_WAITING_POLL_SECONDS


async def test_a_burst_of_starts_runs_on_a_bounded_number_of_executor_threads(launch, database_url) -> None:
    """DBOS's executor, also the loop's default one, is unbounded unless configured: a burst of
    starts made a thread per waiting call (10,000 starts on one worker: ~10,000 threads, each
    waiting for a pooled connection until its timeout failed the instance). Bounded, the calls
    queue (engine.EXECUTOR_THREADS)."""
    import threading

    from xflow_runtime.engine.durable.engine import EXECUTOR_THREADS

    async def body(request: dict[str, Any], port: DurablePort) -> Any:
        return await port.wait_event("t", 600)

    engine = launch(database_url, body)
    most = 0

    async def sample() -> None:
        nonlocal most
        while True:
            most = max(most, sum(1 for t in threading.enumerate() if t.name.startswith("dbos-executor-")))
            await asyncio.sleep(0.01)

    sampler = asyncio.ensure_future(sample())
    try:
        count = 400
        await asyncio.gather(*(engine.start(f"burst-{k}", {}) for k in range(count)))
        await asyncio.gather(*(engine.send(f"burst-{k}", "t", {"n": k}) for k in range(count)))
        results = await asyncio.wait_for(asyncio.gather(*(engine.result(f"burst-{k}") for k in range(count))), 300)
    finally:
        sampler.cancel()
    assert results == [{"n": k} for k in range(count)]
    assert 0 < most <= EXECUTOR_THREADS, most
