"""A fleet of worker processes on one real PostgreSQL (specs/deployment.md): instances started by a
front end run on any worker, a SIGKILLed worker's instances finish on the others from their last
completed step, no completed step runs twice, no instance runs on two workers at once, SIGTERM
drains."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fleet.support import (
    check_invocations, database_now, fleet_table, invocations, start_worker, start_workers,
)
from xflow_runtime.engine.fleet_options import FleetOptions
from xflow_runtime.llm.client import LLMSettings
from xflow_runtime.runtime import Runtime

pytestmark = pytest.mark.postgres

MIX = Path(__file__).with_name("mix.yaml")
SCRIPT = {"default": {"text": "an answer"}}


def _event(k: int) -> dict[str, Any]:
    return {"type": "fleet.go", "source": "/fleet-test", "id": f"go-{k}", "data": {"k": k}}


async def _run_mix(runtime: Runtime, count: int, prefix: str) -> dict[str, Any]:
    plan = runtime.load(MIX)
    ids = [f"{prefix}-{k}" for k in range(count)]
    for k, instance_id in enumerate(ids):
        await runtime.start(plan, {"n": k}, instance_id=instance_id)
        if k % 4 == 2:
            await runtime.send_event(_event(k), instance_id=instance_id)
    results = await asyncio.wait_for(
        asyncio.gather(*(runtime.instance(i).result() for i in ids)), timeout=240)
    return {i.rsplit("-", 1)[1]: result for i, result in zip(ids, results)}


async def _reference(count: int, api_base: str) -> dict[str, Any]:
    """The same instances in one process on the in-process engine."""
    async with Runtime(llm=LLMSettings(api_base=api_base, api_key="x")) as runtime:
        return await _run_mix(runtime, count, "ref")


def _front_end(url: str, api_base: str) -> Runtime:
    return Runtime("durable", database_url=url, fleet=FleetOptions(run_instances=False),
                   llm=LLMSettings(api_base=api_base, api_key="x"))


async def test_a_killed_worker_s_instances_finish_on_the_others(postgres_database_url, scripted_model) -> None:
    url = postgres_database_url
    scripted_model.set_script(SCRIPT)
    fleet_table(url)
    count = 200
    args = ("--llm-api-base", scripted_model.api_base, "--concurrency", "40")
    # the single-process reference runs while the workers start
    expected, workers = await asyncio.gather(_reference(count, scripted_model.api_base),
                                             asyncio.to_thread(start_workers, 3, url, *args))
    victim = random.choice(workers)
    kill_after = random.randint(20, 200)  # of the 400 invocations (2 per instance): work is left
    killed_at = None
    try:
        async with _front_end(url, scripted_model.api_base) as runtime:
            running = asyncio.ensure_future(_run_mix(runtime, count, "mix"))
            while not running.done() and len(await asyncio.to_thread(invocations, url)) < kill_after:
                await asyncio.sleep(0.05)
            victim.kill()
            killed_at = await asyncio.to_thread(database_now, url)
            outputs = await running
        assert outputs == expected
        rows = await asyncio.to_thread(invocations, url)
        assert {row[2] for row in rows} - {w.pid for w in workers} == set()
        assert len({row[2] for row in rows}) >= 2, "the instances ran on more than one worker"
        again = check_invocations(rows, victim.pid, killed_at)
        assert again <= 40  # only what the victim had in flight (its concurrency)
        first_on = {row[0]: row[2] for row in rows if row[1] == "first"}
        taken_over = [row[0] for row in rows if row[1] == "last" and first_on[row[0]] == victim.pid
                      and row[2] != victim.pid]
        assert taken_over, "the victim's unfinished instances finished elsewhere"
        victims = {row[0] for row in rows if row[2] == victim.pid}
        resumed = min(row[3] for row in rows if row[0] in victims and row[2] != victim.pid and row[3] > killed_at)
        print(f"killed after {kill_after} invocations; {len(taken_over)} instances taken over, "
              f"{again} invocation(s) in flight ran again; first step of a taken-over instance "
              f"{(resumed - killed_at).total_seconds():.1f} s after the kill (T = 5 s)")
    finally:
        for worker in workers:
            if worker.process.poll() is None:
                worker.terminate()


async def test_sigterm_drains_and_hands_instances_back_at_once(postgres_database_url, scripted_model) -> None:
    """A draining worker finishes its step in flight, exits 0 and its waiting instances continue on
    another worker without waiting for the death timeout (its row says 'exited')."""
    url = postgres_database_url
    scripted_model.set_script(SCRIPT)
    fleet_table(url)
    first = start_worker(url, "--llm-api-base", scripted_model.api_base, dead_after=60)
    async with _front_end(url, scripted_model.api_base) as runtime:
        plan = runtime.load(MIX)
        ids = [f"wait-{k}" for k in (2, 6, 10)]  # n % 4 == 2: they wait for an event
        for instance_id, k in zip(ids, (2, 6, 10)):
            await runtime.start(plan, {"n": k}, instance_id=instance_id)
        while len(await asyncio.to_thread(invocations, url)) < 3:
            await asyncio.sleep(0.05)
        second = start_worker(url, "--llm-api-base", scripted_model.api_base, dead_after=60)
        try:
            started = time.monotonic()
            assert first.terminate() == 0
            for instance_id, k in zip(ids, (2, 6, 10)):
                await runtime.send_event(_event(k), instance_id=instance_id)
            results = await asyncio.wait_for(asyncio.gather(*(runtime.instance(i).result() for i in ids)), 60)
            # a death timeout of 60 s was not waited for
            assert time.monotonic() - started < 45
        finally:
            second.terminate()
    assert [r["last"] for r in results] == [{"label": "last", "square": k * k} for k in (2, 6, 10)]
    rows = await asyncio.to_thread(invocations, url)
    check_invocations(rows, None, None)
    assert {row[2] for row in rows if row[1] == "last"} == {second.pid}


VERSIONED = """
id: versioned
version: '{version}'
specVersion: '0.8'
start: Wait
events:
  - name: Go
    type: fleet.go
    source: /fleet-test
states:
  - name: Wait
    type: event
    onEvents:
      - eventRefs: [Go]
    transition: Done
  - name: Done
    type: inject
    data: {{ran: '{version}'}}
    end: true
"""


async def test_a_running_instance_finishes_on_its_definition_after_a_change_and_a_takeover(
        postgres_database_url, tmp_path) -> None:
    """Started on v1, the file then changed to v2 and the worker killed: a worker that only ever
    saw v2 finishes the instance on v1 (its recorded text); new instances get v2."""
    url = postgres_database_url
    fleet_table(url)
    folder = tmp_path / "defs"
    folder.mkdir()
    path = folder / "versioned.yaml"
    path.write_text(VERSIONED.format(version="1"))
    first = start_worker(url, "--workflows", str(folder))
    second = None
    try:
        async with Runtime("durable", database_url=url, fleet=FleetOptions(run_instances=False)) as runtime:
            await runtime.start(runtime.load(path), {}, instance_id="old")
            while (await runtime.status_row("old") or {}).get("status") != "PENDING":
                await asyncio.sleep(0.05)
            path.write_text(VERSIONED.format(version="2"))
            first.kill()
            second = start_worker(url, "--workflows", str(folder))
            new = await runtime.start(runtime.load(path), {}, instance_id="new")
            for instance_id in ("old", "new"):
                await runtime.send_event(_event(0), instance_id=instance_id)
            assert (await asyncio.wait_for(runtime.instance("old").result(), 90))["ran"] == "1"
            assert (await asyncio.wait_for(new.result(), 90))["ran"] == "2"
    finally:
        for worker in (first, second):
            if worker is not None and worker.process.poll() is None:
                worker.terminate()
