"""Subflows and HTTP settings through the public Runtime and ``xflow run``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.functions.server import Reply
from xflow_runtime.errors import WorkflowFailed, XFlowError
from xflow_runtime.functions import HttpSettings
from xflow_runtime.runtime import Runtime

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
id: child
version: '1.0'
specVersion: '0.8'
start: double
states:
  - {name: double, type: inject, data: {child: true}, stateDataFilter: {output: '${ {doubled: (.value * 2), child} }'},
     end: true}
"""

PARENT = """
id: parent
specVersion: '0.8'
start: call
states:
  - name: call
    type: operation
    actions: [{subFlowRef: child, actionDataFilter: {toStateData: '${ .result }'}}]
    end: true
"""

WAITING_PARENT = """
id: waiting-parent
specVersion: '0.8'
start: wait
events: [{name: go, type: go, source: test}]
states:
  - {name: wait, type: event, onEvents: [{eventRefs: [go], actions: []}], transition: call}
  - name: call
    type: operation
    actions: [{subFlowRef: child, actionDataFilter: {toStateData: '${ .result }'}}]
    end: true
"""


def files(tmp_path: Path, parent: str = PARENT) -> tuple[Path, Path]:
    (tmp_path / "parent.yaml").write_text(parent)
    (tmp_path / "child.yaml").write_text(CHILD)
    return tmp_path / "parent.yaml", tmp_path / "child.yaml"


@pytest.mark.parametrize("engine", ["inprocess", "durable"])
async def test_a_registered_subflow_runs_on_both_engines(engine, tmp_path):
    parent, child = files(tmp_path)
    async with Runtime(engine, database_url=f"sqlite:///{tmp_path / 'store.sqlite'}", workflows=[child]) as runtime:
        output = await (await runtime.start(runtime.load(parent), {"value": 21})).result(timeout=60)
    assert output["result"] == {"doubled": 42, "child": True}


async def test_register_after_construction_and_an_unregistered_subflow_fails(tmp_path):
    parent, child = files(tmp_path)
    async with Runtime() as runtime:
        plan = runtime.load(parent)
        with pytest.raises(WorkflowFailed):
            await (await runtime.start(plan, {"value": 1})).result(timeout=30)
        runtime.register(runtime.load(child))
        assert (await (await runtime.start(plan, {"value": 1})).result(timeout=30))["result"]["doubled"] == 2


async def test_register_refuses_a_plan_of_another_runtime(tmp_path):
    _, child = files(tmp_path)
    other = Runtime().load(child)
    with pytest.raises(XFlowError, match="register"):
        Runtime().register(other)


@pytest.mark.slow
async def test_a_resumed_durable_instance_finds_the_subflows_it_started_with(tmp_path):
    parent, child = files(tmp_path, WAITING_PARENT)
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    first = Runtime("durable", database_url=url, workflows=[child])
    await first.start(first.load(parent), {"value": 5}, instance_id="p-1")
    await first.close()  # the process stops while the instance waits for its event
    child.unlink()  # and the subflow file is gone: the recorded text is what counts

    async with Runtime("durable", database_url=url) as second:  # nothing registered
        await second.send_event({"type": "go", "source": "test", "data": {}}, instance_id="p-1")
        output = await second.instance("p-1").result(timeout=60)
    assert output["result"] == {"doubled": 10, "child": True}


@pytest.mark.slow
def test_xflow_run_takes_subflows_with_workflow(tmp_path):
    parent, child = files(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "XFLOW_DATABASE_URL"}
    for extra in (["--ephemeral"], []):
        done = subprocess.run([sys.executable, str(ROOT / "bin" / "xflow"), "run", str(parent), "--workflow", str(child),
                               "--input", '{"value": 4}', *extra], capture_output=True, text=True, timeout=120,
                              cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["result"]["doubled"] == 8


USERS = """
id: users
specVersion: '0.8'
start: get
functions:
  - {name: getUser, type: rest, operation: {/users: {get: {}}}}
states:
  - {name: get, type: operation, actions: [{functionRef: getUser, actionDataFilter: {toStateData: '${ .user }'}}],
     end: true}
"""


async def test_http_settings_give_a_function_its_base_url_and_timeout(server, tmp_path):
    (tmp_path / "users.yaml").write_text(USERS)
    server.route("GET", "/users", Reply(body={"name": "Ann"}))
    async with Runtime(http=HttpSettings(base_urls={"getUser": server.url})) as runtime:
        output = await (await runtime.start(runtime.load(tmp_path / "users.yaml"))).result(timeout=30)
    assert output["user"] == {"name": "Ann"}
    assert [r.path for r in server.only("GET")] == ["/users"]

    server.route("GET", "/users", Reply(body={"name": "Ann"}, delay=1.0))
    settings = HttpSettings(base_urls={"getUser": server.url}, timeouts={"getUser": 0.2})
    async with Runtime(http=settings) as runtime:
        with pytest.raises(WorkflowFailed) as failed:
            await (await runtime.start(runtime.load(tmp_path / "users.yaml"))).result(timeout=30)
    assert failed.value.error["code"] == "timeout", failed.value.error
