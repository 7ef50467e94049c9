"""The embedding API: ``Runtime`` (load once, run many, on either engine) and ``run_sync``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import xflow_runtime
from xflow_runtime import Runtime, WorkflowFailed, run_sync
from xflow_runtime.errors import XFlowError

APPROVAL = """
id: approval
specVersion: "0.8"
start: Charge
events:
  - {name: Approved, type: approval.given, source: /people}
functions:
  - {name: charge, type: custom, operation: charge}
states:
  - name: Charge
    type: operation
    actions:
      - functionRef: {refName: charge, arguments: {amount: "${ .amount }"}}
        actionDataFilter: {toStateData: "${ .receipt }"}
    transition: Wait
  - name: Wait
    type: event
    onEvents:
      - eventRefs: [Approved]
        eventDataFilter: {toStateData: "${ .approval }"}
    timeouts: {eventTimeout: PT30S}
    end: true
"""

FAILS = """
id: fails
specVersion: "0.8"
start: Explode
states:
  - name: Explode
    type: inject
    data: {}
    stateDataFilter: {output: '${ error("nope") }'}
    end: true
"""

APPROVED = {"specversion": "1.0", "type": "approval.given", "source": "/people", "data": {"by": "ana"}}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {"approval": tmp_path / "approval.yaml", "fails": tmp_path / "fails.yaml"}
    paths["approval"].write_text(APPROVAL)
    paths["fails"].write_text(FAILS)
    return paths


class Charges:
    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, *, amount: int) -> dict[str, Any]:
        self.calls.append(amount)
        return {"charged": amount}


def test_the_api_is_exported_lazily() -> None:
    assert {"Runtime", "InstanceHandle", "run_sync"} <= set(xflow_runtime.__all__)
    assert xflow_runtime.Runtime is Runtime


@pytest.mark.parametrize("engine", ["inprocess", "durable"])
async def test_load_once_run_many_with_events(engine: str, files, tmp_path: Path) -> None:
    charges = Charges()
    async with Runtime(engine, database_url=f"sqlite:///{tmp_path / 's.sqlite'}",
                       functions={"charge": charges}) as runtime:
        plan = runtime.load(files["approval"])
        assert runtime.load(files["approval"]) is plan  # compiled once
        handles = [await runtime.start(plan, {"amount": n}) for n in (10, 20)]
        for handle in handles:
            await handle.send_event(APPROVED)
        outputs = [await handle.result() for handle in handles]
    assert outputs == [{"amount": n, "receipt": {"charged": n}, "approval": {"by": "ana"}} for n in (10, 20)]
    assert sorted(charges.calls) == [10, 20]


@pytest.mark.parametrize("engine", ["inprocess", "durable"])
async def test_a_failed_instance_raises_workflow_failed(engine: str, files, tmp_path: Path) -> None:
    async with Runtime(engine, database_url=f"sqlite:///{tmp_path / 's.sqlite'}") as runtime:
        handle = await runtime.start(runtime.load(files["fails"]), instance_id="will-fail")
        with pytest.raises(WorkflowFailed) as failed:
            await handle.result()
    assert failed.value.instance_id == "will-fail"
    assert "nope" in failed.value.error["message"]


async def test_an_event_sent_before_the_instance_waits_is_kept(files, tmp_path: Path) -> None:
    charges = Charges()
    async with Runtime("durable", database_url=f"sqlite:///{tmp_path / 's.sqlite'}",
                       functions={"charge": charges}) as runtime:
        handle = await runtime.start(runtime.load(files["approval"]), {"amount": 1})
        await runtime.send_event(APPROVED, instance_id=handle.instance_id)
        assert (await handle.result())["approval"] == {"by": "ana"}


async def test_a_restarted_runtime_recovers_its_instances_without_rerunning_steps(files, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    charges = Charges()
    first = Runtime("durable", database_url=url, functions={"charge": charges})
    await first.start(first.load(files["approval"]), {"amount": 5}, instance_id="order-5")
    for _ in range(200):  # wait until it charged and waits for the approval
        described = await first.describe("order-5")
        if [s["state"] for s in described["states"]] == ["Charge", "Wait"]:
            break
        await asyncio.sleep(0.05)
    await first.close()  # the process "dies" while the instance waits

    second = Runtime("durable", database_url=url, functions={"charge": charges})
    async with second:  # opening recovers PENDING instances of executor "local"
        await second.send_event(APPROVED, instance_id="order-5")
        assert (await second.instance("order-5").result())["approval"] == {"by": "ana"}
        described = await second.describe("order-5")
        listed = await second.list_instances()
    assert charges.calls == [5]
    assert [s["state"] for s in described["states"]] == ["Charge", "Wait"]
    assert [(row["instance_id"], row["status"]) for row in listed] == [("order-5", "SUCCESS")]


async def test_waiting_instances_do_not_block_the_callers_event_loop(files, tmp_path: Path) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    async with Runtime("durable", database_url=f"sqlite:///{tmp_path / 's.sqlite'}",
                       functions={"charge": Charges()}) as runtime:
        handle = await runtime.start(runtime.load(files["approval"]), {"amount": 1})
        ticking = asyncio.ensure_future(ticker())
        await asyncio.sleep(0.5)  # the instance waits for its event meanwhile
        ticks_while_waiting = ticks
        await handle.send_event(APPROVED)
        await handle.result()
        ticking.cancel()
    assert ticks_while_waiting >= 10


async def test_unknown_instances_and_inspection_without_records_are_clear_errors(files) -> None:
    async with Runtime("inprocess") as runtime:
        with pytest.raises(XFlowError, match="no instance"):
            await runtime.instance("missing").result()
        with pytest.raises(XFlowError, match="keeps no records"):
            await runtime.list_instances()


def test_run_sync_runs_one_instance_to_its_output(files) -> None:
    output = run_sync(files["approval"], {"amount": 3}, functions={"charge": Charges()}, events=[APPROVED])
    assert output == {"amount": 3, "receipt": {"charged": 3}, "approval": {"by": "ana"}}


def test_a_workflow_file_that_cannot_be_read_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(XFlowError, match="cannot read workflow file"):
        Runtime().load(tmp_path / "absent.yaml")


async def test_a_resumed_instance_replays_the_definition_it_started_with(files, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    first = Runtime("durable", database_url=url, functions={"charge": Charges()})
    await first.start(first.load(files["approval"]), {"amount": 7}, instance_id="order-7")
    for _ in range(200):
        if len((await first.describe("order-7"))["states"]) == 2:
            break
        await asyncio.sleep(0.05)
    await first.close()
    files["approval"].write_text("this file is no longer a workflow: {")  # edited meanwhile
    async with Runtime("durable", database_url=url, functions={"charge": Charges()}) as second:
        await second.send_event(APPROVED, instance_id="order-7")
        assert (await second.instance("order-7").result())["receipt"] == {"charged": 7}


TIMED = """
id: timed
specVersion: "0.8"
start: Quick
events:
  - {name: Go, type: go, source: /t}
functions:
  - {name: charge, type: custom, operation: charge}
states:
  - name: Quick
    type: operation
    timeouts: {stateExecTimeout: PT1S}
    actions:
      - functionRef: {refName: charge, arguments: {amount: 1}}
        actionDataFilter: {toStateData: "${ .receipt }"}
    transition: Wait
  - name: Wait
    type: event
    onEvents: [{eventRefs: [Go]}]
    end: true
"""


async def test_a_timeout_that_did_not_fire_does_not_fire_on_replay_after_its_time(tmp_path: Path) -> None:
    """The Quick state raced its 1 s timeout and won; the instance is recovered after that second
    has passed. Replaying Quick must not let the (long expired) timer win this time."""
    (tmp_path / "timed.yaml").write_text(TIMED)
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    charges = Charges()
    first = Runtime("durable", database_url=url, functions={"charge": charges})
    await first.start(first.load(tmp_path / "timed.yaml"), {}, instance_id="timed-1")
    for _ in range(200):
        if [s["state"] for s in (await first.describe("timed-1"))["states"]] == ["Quick", "Wait"]:
            break
        await asyncio.sleep(0.05)
    await first.close()
    await asyncio.sleep(1.2)  # Quick's timer is now in the past
    async with Runtime("durable", database_url=url, functions={"charge": charges}) as second:
        await second.send_event({"type": "go", "source": "/t"}, instance_id="timed-1")
        assert await second.instance("timed-1").result() == {"receipt": {"charged": 1}}
    assert charges.calls == [1]


async def test_a_timeout_that_fired_fires_again_on_replay(tmp_path: Path) -> None:
    """The reverse: the timer won the first time (the action was slower), so the replay takes
    the onErrors path again instead of waiting for the action."""
    slow_timed = TIMED.replace("PT1S", "PT0.2S").replace(
        "    transition: Wait\n  - name: Wait",
        "    onErrors: [{errorRef: Timeout, transition: Wait}]\n    transition: Wait\n  - name: Wait",
    ).replace("functions:", "errors:\n  - {name: Timeout, code: timeout}\nfunctions:")
    (tmp_path / "timed.yaml").write_text(slow_timed)
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    calls: list[int] = []

    async def slow_charge(*, amount: int) -> dict[str, Any]:
        calls.append(amount)
        await asyncio.sleep(1.0)
        return {"charged": amount}

    first = Runtime("durable", database_url=url, functions={"charge": slow_charge})
    await first.start(first.load(tmp_path / "timed.yaml"), {}, instance_id="timed-2")
    for _ in range(200):
        if [s["state"] for s in (await first.describe("timed-2"))["states"]] == ["Quick", "Wait"]:
            break
        await asyncio.sleep(0.05)
    await first.close()
    async with Runtime("durable", database_url=url, functions={"charge": slow_charge}) as second:
        await second.send_event({"type": "go", "source": "/t"}, instance_id="timed-2")
        assert await second.instance("timed-2").result() == {}
        described = await second.describe("timed-2")
    assert described["states"][0]["error"]["code"] == "timeout"


async def test_concurrent_first_calls_open_the_durable_engine_once(files, tmp_path: Path) -> None:
    async with Runtime("durable", database_url=f"sqlite:///{tmp_path / 's.sqlite'}",
                       functions={"charge": Charges()}) as runtime:
        pass  # opened and closed: a second runtime in this process may open again
    runtime = Runtime("durable", database_url=f"sqlite:///{tmp_path / 's.sqlite'}",
                      functions={"charge": Charges()})
    plan = runtime.load(files["approval"])
    handles = await asyncio.gather(*(runtime.start(plan, {"amount": n}) for n in range(3)))
    try:
        for handle in handles:
            await handle.send_event(APPROVED)
        assert [(await h.result())["receipt"] for h in handles] == [{"charged": n} for n in range(3)]
    finally:
        await runtime.close()


PARALLEL = """
id: fan
specVersion: "0.8"
start: Fan
events:
  - {name: Go, type: go, source: /t}
functions:
  - {name: work, type: custom, operation: work}
states:
  - name: Fan
    type: parallel
    branches:
      - name: Slow
        actions:
          - functionRef: {refName: work, arguments: {name: a1, pause: 0.3}}
          - functionRef: {refName: work, arguments: {name: a2, pause: 0.0}}
      - name: Fast
        actions:
          - functionRef: {refName: work, arguments: {name: b1, pause: 0.0}}
          - functionRef: {refName: work, arguments: {name: b2, pause: 0.0}}
    transition: Wait
  - name: Wait
    type: event
    onEvents: [{eventRefs: [Go]}]
    end: true
"""


async def test_parallel_branches_replay_in_the_order_they_first_ran(tmp_path: Path) -> None:
    """The fast branch drew its second step before the slow branch drew its own: a replay (where
    every recorded step returns at once) must repeat that order, not its own."""
    (tmp_path / "fan.yaml").write_text(PARALLEL)
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    calls: list[str] = []

    async def work(name: str, pause: float) -> dict[str, Any]:
        calls.append(name)
        await asyncio.sleep(pause)
        return {name: True}

    first = Runtime("durable", database_url=url, functions={"work": work})
    await first.start(first.load(tmp_path / "fan.yaml"), {}, instance_id="fan-1")
    for _ in range(200):
        if [s["state"] for s in (await first.describe("fan-1"))["states"]] == ["Fan", "Wait"]:
            break
        await asyncio.sleep(0.05)
    await first.close()
    async with Runtime("durable", database_url=url, functions={"work": work}) as second:
        await second.send_event({"type": "go", "source": "/t"}, instance_id="fan-1")
        await second.instance("fan-1").result()
    assert sorted(calls) == ["a1", "a2", "b1", "b2"]  # recovery re-ran none of them


WAITING_BRANCHES = """
id: waiting-branches
specVersion: "0.8"
start: Both
events:
  - {name: Left, type: left, source: /t, dataOnly: true}
  - {name: Right, type: right, source: /t, dataOnly: true}
  - {name: Ask, type: ask, source: /t, kind: produced}
states:
  - name: Both
    type: parallel
    branches:
      - name: L
        actions:
          - eventRef: {triggerEventRef: Ask, resultEventRef: Left}
            actionDataFilter: {toStateData: "${ .left }"}
      - name: R
        actions:
          - eventRef: {triggerEventRef: Ask, resultEventRef: Right}
            actionDataFilter: {toStateData: "${ .right }"}
    end: true
"""


async def test_branches_waiting_for_events_at_a_restart_each_get_their_own(tmp_path: Path) -> None:
    """Two branches wait for different events; one arrives before the process stops, one after.
    The replay rebuilds the first from the recording (the inbox's reader is one task of its own,
    so it does not matter which branch asked first) and waits for the second."""
    (tmp_path / "waiting.yaml").write_text(WAITING_BRANCHES)
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    first = Runtime("durable", database_url=url)
    await first.start(first.load(tmp_path / "waiting.yaml"), {}, instance_id="wb-1")
    await first.send_event({"type": "right", "source": "/t", "data": {"n": 2}}, instance_id="wb-1")
    from dbos import DBOS

    for _ in range(200):  # the instance has received the event (DBOS recorded the receive)
        steps = await DBOS.list_workflow_steps_async("wb-1")
        if any(step["function_name"] == "DBOS.recv" for step in steps):
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the instance never received the first event")
    await first.close()
    async with Runtime("durable", database_url=url) as second:
        await second.send_event({"type": "left", "source": "/t", "data": {"n": 1}}, instance_id="wb-1")
        output = await second.instance("wb-1").result(timeout=60)
    assert output == {"left": {"n": 1}, "right": {"n": 2}}



def test_instance_services_are_typed() -> None:
    """What an instance sees is one typed object; a mapping with the same keys is accepted (the
    ``run_workflow(services=…)`` convenience), and a misspelt key is an error, not ignored."""
    from xflow_runtime.interpreter.context import ExecutionContext
    from xflow_runtime.interpreter.services import Identity, InstanceServices

    context = ExecutionContext(services={"identity": {"tenant": "acme", "user": "ann"}})
    assert context.services == InstanceServices(identity=Identity("acme", "ann"))
    assert ExecutionContext().services.identity == Identity("default", None)
    with pytest.raises(TypeError, match="chat_memroy"):
        InstanceServices.of({"chat_memroy": object()})


@pytest.mark.parametrize("engine", ["inprocess", "durable"])
async def test_count_instances_counts_every_instance_by_engine_status(engine: str, files, tmp_path: Path) -> None:
    """The service's instance gauge asks this (specs/service.md, "Operations"): either engine answers."""
    async with Runtime(engine, database_url=f"sqlite:///{tmp_path / 's.sqlite'}",
                       functions={"charge": Charges()}) as runtime:
        approval = runtime.load(files["approval"])
        waits = await runtime.start(approval, {"amount": 1})
        approved = await runtime.start(approval, {"amount": 2})
        await approved.send_event(APPROVED)
        await approved.result()
        failed = await runtime.start(runtime.load(files["fails"]))
        with pytest.raises(WorkflowFailed):
            await failed.result()
        counts = await runtime.count_instances([waits.instance_id, failed.instance_id, "unknown"])
        assert dict(counts.by_status) == {"PENDING": 1, "SUCCESS": 1, "ERROR": 1} and counts.total == 3
        assert dict(counts.of) == {waits.instance_id: "PENDING", failed.instance_id: "ERROR"}
        assert dict((await runtime.count_instances()).of) == {}
