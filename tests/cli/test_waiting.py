"""A run that waits says what it waits for and prints the command that delivers it; that command,
run exactly as printed, completes the instance. ``--detach``, ``--wait-timeout`` (exit 3)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xflow_runtime.cli.waiting import delivery_commands, message_wait, notice, wait_of
from xflow_runtime.plan.compile import compile_plan

REPO = Path(__file__).resolve().parents[2]

WAITS = """
id: waits
specVersion: "0.8"
start: Wait
events: [{name: Go, type: go, source: /t}]
states:
  - name: Wait
    type: event
    onEvents: [{eventRefs: [Go], eventDataFilter: {toStateData: "${ .got }"}}]
    timeouts: {eventTimeout: PT1H}
    end: true
"""


def xflow(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "bin" / "xflow"), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": str(REPO)})


def as_run(command: str) -> list[str]:
    """A printed ``xflow …`` command, split as a POSIX shell would, run from this checkout."""
    words = shlex.split(command)
    assert words[0] == "xflow"
    return [sys.executable, str(REPO / "bin" / "xflow"), *words[1:]]


def printed_commands(stderr: str, after: str) -> list[str]:
    lines = stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if after in line)
    return [line.strip() for line in lines[start + 1:] if line.startswith("    xflow ")]


@pytest.mark.slow
def test_a_run_left_waiting_prints_a_command_that_completes_it(tmp_path: Path) -> None:
    (tmp_path / "waits.yaml").write_text(WAITS)
    waited = xflow("run", "waits.yaml", "--wait-timeout", "1", cwd=tmp_path)
    assert waited.returncode == 3, waited.stderr
    assert waited.stdout == ""
    assert "waiting in state Wait: an event: type=go source=/t" in waited.stderr
    assert "gives up at 20" in waited.stderr and "keeps waiting durably" in waited.stderr
    [command] = printed_commands(waited.stderr, "deliver it and continue with:")
    assert "--no-wait" not in command
    done = subprocess.run(as_run(command), cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"got": {}}


@pytest.mark.slow
def test_an_attached_run_prints_a_delivery_command_for_another_shell(tmp_path: Path) -> None:
    (tmp_path / "waits.yaml").write_text(WAITS)
    process = subprocess.Popen([sys.executable, str(REPO / "bin" / "xflow"), "run", "waits.yaml"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        seen, deadline = [], time.monotonic() + 90
        while time.monotonic() < deadline:
            line = process.stderr.readline()
            seen.append(line)
            if line.startswith("    xflow send "):
                break
        command = seen[-1].strip()
        assert command.endswith("--no-wait"), "".join(seen)
        sent = subprocess.run(as_run(command), cwd=tmp_path, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        assert sent.returncode == 0, sent.stderr
        out, _ = process.communicate(timeout=90)
        assert process.returncode == 0
        assert json.loads(out) == {"got": {}}
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.slow
def test_detach_prints_the_id_and_a_timer_says_when_it_is_due(tmp_path: Path) -> None:
    (tmp_path / "sleeps.yaml").write_text('id: sleeps\nspecVersion: "0.8"\nstart: Nap\nstates:\n'
                                          '  - {name: Nap, type: sleep, duration: PT1H, end: true}\n')
    detached = xflow("run", "sleeps.yaml", "--detach", cwd=tmp_path)
    assert detached.returncode == 0, detached.stderr
    instance = detached.stdout.strip()
    assert "waiting in state Nap: a timer, due at 20" in detached.stderr
    assert f"xflow resume {instance}" in detached.stderr


def test_detach_and_wait_timeout_need_a_durable_instance(cli, workdir) -> None:
    result = cli("run", "greet.yaml", "--ephemeral", "--detach")
    assert result.code == 2 and "durable" in result.err


def test_an_ephemeral_run_says_nothing_outside_can_reach_it(workdir) -> None:
    import yaml

    plan = compile_plan(yaml.safe_load((workdir / "two-events.yaml").read_text()))
    lines = notice(wait_of(plan, "First", 0.0), None, attached=True)
    assert lines[0] == "waiting in state First: an event: type=test.step source=/tests"
    assert "--ephemeral" in lines[-1]


def _plan(states: str, events: str = "[]") -> object:
    import yaml

    return compile_plan(yaml.safe_load(f'id: p\nspecVersion: "0.8"\nstart: S\nevents: {events}\n'
                                       f'functions: [{{name: f, type: custom, operation: "python:os:getcwd"}}]\n'
                                       f'states:\n{states}'))


def test_what_each_kind_of_state_waits_for() -> None:
    events = ('[{name: Paid, type: paid, source: /pay, correlation: [{contextAttributeName: orderid}]},'
              ' {name: Shipped, type: shipped, source: /ship}]')
    every = _plan("  - {name: S, type: event, exclusive: false, onEvents: [{eventRefs: [Paid, Shipped]}], end: true}",
                  events)
    wait = wait_of(every, "S", 100.0)
    assert (wait.kind, wait.all_of) == ("event", True)
    assert notice(wait, "i-1", attached=False)[0] == (
        "waiting in state S: every one of these events: type=paid source=/pay orderid=<correlation value> "
        "and type=shipped source=/ship")
    first = delivery_commands(wait, "i-1", attached=False, options=["--db", "sqlite:///x y.sqlite"])[0]
    assert shlex.split(first) == ["xflow", "send", "i-1", "--event",
                                  '{"type":"paid","source":"/pay","orderid":"<orderid>","data":{}}',
                                  "--db", "sqlite:///x y.sqlite"]
    callback = _plan("  - {name: S, type: callback, action: {functionRef: f}, eventRef: Paid, end: true}", events)
    assert wait_of(callback, "S", 0.0).kind == "callback"
    assert "a callback event: type=paid" in notice(wait_of(callback, "S", 0.0), "i-1", attached=True)[0]
    assert wait_of(_plan("  - {name: S, type: inject, data: {}, end: true}"), "S", 0.0) is None
    chat = message_wait("Agent")
    assert delivery_commands(chat, "i-1", attached=True) == ["xflow send i-1 --message TEXT --no-wait"]
