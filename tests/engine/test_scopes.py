"""Scopes name concurrent work the same way in every run (``engine/scopes.py``)."""

from __future__ import annotations

import asyncio
import random

from hypothesis import given, settings, strategies as st

from xflow_runtime.engine.scopes import cancel_decided, current_scope, enter_root, start_tasks


async def _record(names: list[str], delay: float, calls: int) -> None:
    for _ in range(calls):
        scope = current_scope()
        await asyncio.sleep(delay)
        names.append(f"{scope.path}#{scope.take()}")


async def _run(delays: list[float]) -> list[str]:
    enter_root()
    names: list[str] = []
    current_scope().take()  # the root has done something before
    key, tasks = start_tasks([_record(names, delay, 2) for delay in delays])
    await asyncio.gather(*tasks)
    names.append(key)
    return sorted(names)


@settings(max_examples=20)
@given(seed=st.integers(min_value=0, max_value=10**6))
def test_names_do_not_depend_on_which_task_finishes_first(seed: int) -> None:
    rng = random.Random(seed)
    delays = [rng.choice([0.0, 0.001, 0.002]) for _ in range(3)]
    reference = asyncio.run(_run([0.0, 0.0, 0.0]))
    assert asyncio.run(_run(delays)) == reference
    assert reference == ["#1", "/1.0#0", "/1.0#1", "/1.1#0", "/1.1#1", "/1.2#0", "/1.2#1"]


async def test_tasks_get_labelled_scopes_under_a_fresh_number_of_their_parent() -> None:
    enter_root()
    seen: list[str] = []

    async def where() -> None:
        seen.append(current_scope().path)

    _, first = start_tasks([where(), where()], ("work", "timer"))
    _, second = start_tasks([where()])
    await asyncio.gather(*first, *second)
    assert sorted(seen) == ["/0.timer", "/0.work", "/1.0"]


async def test_a_decided_cancellation_marks_the_task_and_what_runs_inside_it() -> None:
    enter_root()
    marks: list[bool] = []
    inner_started = asyncio.Event()

    async def inner() -> None:
        try:
            inner_started.set()
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            marks.append(current_scope().cancelled_by_decision)
            raise

    async def outer() -> None:
        _, tasks = start_tasks([inner()])
        try:
            await asyncio.gather(*tasks)
        except asyncio.CancelledError:
            marks.append(current_scope().cancelled_by_decision)
            raise

    _, (task,) = start_tasks([outer()])
    await inner_started.wait()
    await cancel_decided([task])
    assert sorted(marks) == [True, True]


async def test_a_plain_cancellation_is_not_a_decision() -> None:
    enter_root()
    marks: list[bool] = []

    async def waits() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            marks.append(current_scope().cancelled_by_decision)
            raise

    _, (task,) = start_tasks([waits()])
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert marks == [False]


async def test_ended_scopes_are_kept_only_when_a_replay_listens() -> None:
    root = enter_root()
    _, tasks = start_tasks([asyncio.sleep(0)])
    await asyncio.gather(*tasks)
    assert not root.has_ended("/0.0")  # in process: nothing kept
    heard: list[bool] = []
    root.on_change(lambda: heard.append(True))
    _, tasks = start_tasks([asyncio.sleep(0)])
    await asyncio.gather(*tasks)
    assert root.has_ended("/1.0") and heard == [True]


async def test_a_task_cancelled_before_it_ran_closes_its_coroutine() -> None:
    enter_root()
    ran: list[bool] = []

    async def body() -> None:
        ran.append(True)

    coroutine = body()
    _, (task,) = start_tasks([coroutine])
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert ran == [] and coroutine.cr_frame is None  # closed, so no "never awaited" warning
