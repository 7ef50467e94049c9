"""``xflow run``: output on stdout, exit codes 0/1/2, input forms, secrets, events."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from xflow_runtime.cli.run import ProgressPrinter

REPO = Path(__file__).resolve().parents[2]
ENGINES = [pytest.param(["--ephemeral"], id="ephemeral"), pytest.param([], id="durable")]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_completed_instance_prints_its_output_and_exits_0(cli, workdir, engine) -> None:
    result = cli("run", "greet.yaml", *engine, "--input", '{"name": "Ada"}')
    assert result.code == 0, result.err
    assert result.json() == {"greeting": "hello", "name": "Ada", "token": None}


def test_the_durable_default_store_is_sqlite_under_dot_xflow(cli, workdir) -> None:
    assert cli("run", "greet.yaml").code == 0
    assert (workdir / ".xflow" / "xflow.sqlite").is_file()


def test_the_store_url_can_come_from_the_environment(cli, workdir, monkeypatch) -> None:
    monkeypatch.setenv("XFLOW_DATABASE_URL", f"sqlite:///{workdir / 'elsewhere.sqlite'}")
    assert cli("run", "greet.yaml").code == 0
    assert (workdir / "elsewhere.sqlite").is_file()
    assert not (workdir / ".xflow" / "xflow.sqlite").exists()


@pytest.mark.parametrize("form", ["inline", "file", "stdin"])
def test_input_is_read_inline_from_a_file_or_from_stdin(cli, workdir, form) -> None:
    data = '{"name": "Grace"}'
    (workdir / "input.json").write_text(data)
    spec, stdin = {"inline": (data, None), "file": ("@input.json", None), "stdin": ("-", data)}[form]
    result = cli("run", "greet.yaml", "--ephemeral", "--input", spec, stdin=stdin)
    assert result.code == 0, result.err
    assert result.json()["name"] == "Grace"


@pytest.mark.parametrize("spec, message", [
    ("{not json", "--input is not valid JSON"),
    ("@missing.json", "cannot read input file missing.json"),
])
def test_bad_input_is_a_usage_error(cli, workdir, spec, message) -> None:
    result = cli("run", "greet.yaml", "--ephemeral", "--input", spec)
    assert result.code == 2
    assert message in result.err
    assert "Traceback" not in result.err


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_instance_exits_1_with_a_clear_error(cli, workdir, engine) -> None:
    result = cli("run", "fails.yaml", *engine)
    assert result.code == 1
    assert result.out == ""
    assert "the order is broken" in result.err
    assert "Traceback" not in result.err


@pytest.mark.parametrize("engine", ENGINES)
def test_an_invalid_definition_exits_2_with_diagnostics(cli, workdir, engine) -> None:
    result = cli("run", "invalid.yaml", *engine)
    assert result.code == 2
    assert "invalid.yaml:" in result.err  # positioned diagnostics
    assert "Missing" in result.err or "Nowhere" in result.err
    assert not (workdir / ".xflow").exists() or engine == []


def test_a_missing_file_is_an_error_not_a_traceback(cli, workdir) -> None:
    result = cli("run", "nope.yaml", "--ephemeral")
    assert result.code in (1, 2)
    assert "nope.yaml" in result.err
    assert "Traceback" not in result.err


def test_secrets_come_from_options_and_files(cli, workdir) -> None:
    assert cli("run", "greet.yaml", "--ephemeral", "--secret", "token=s3cret").json()["token"] == "s3cret"
    (workdir / "secrets.yaml").write_text("token: from-yaml\n")
    assert cli("run", "greet.yaml", "--ephemeral", "--secrets-file", "secrets.yaml").json()["token"] == "from-yaml"
    (workdir / "secrets.env").write_text("# comment\ntoken=from-env-file\n")
    result = cli("run", "greet.yaml", "--ephemeral", "--secrets-file", "secrets.env", "--secret", "token=wins")
    assert result.json()["token"] == "wins"  # options override the file


def test_a_malformed_secret_is_a_usage_error_that_does_not_echo_it(cli, workdir) -> None:
    (workdir / "bad.env").write_text("hunter2-without-a-name\n")
    result = cli("run", "greet.yaml", "--ephemeral", "--secrets-file", "bad.env")
    assert result.code == 2
    assert "bad.env:1" in result.err and "hunter2" not in result.err
    assert cli("run", "greet.yaml", "--ephemeral", "--secret", "novalue").code == 2


@pytest.mark.parametrize("engine", ENGINES)
def test_events_are_delivered_in_order_and_produced_events_written(cli, workdir, engine) -> None:
    events = [{"type": "test.step", "source": "/tests", "data": {"n": n}} for n in (1, 2)]
    (workdir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    result = cli("run", "two-events.yaml", *engine, "--event", "@events.jsonl", "--events-out", "out.jsonl")
    assert result.code == 0, result.err
    assert result.json() == {"first": {"n": 1}, "second": {"n": 2}}
    produced = [json.loads(line) for line in (workdir / "out.jsonl").read_text().splitlines()]
    assert [(e["type"], e["data"]) for e in produced] == [("test.done", {"first": 1, "second": 2})]


def test_produced_events_go_to_stderr_by_default(cli, workdir) -> None:
    event = json.dumps({"type": "test.step", "source": "/tests", "data": {"n": 5}})
    result = cli("run", "two-events.yaml", "--ephemeral", "--event", event, "--event", event)
    assert result.code == 0, result.err
    assert json.loads(result.err.strip().splitlines()[-1])["type"] == "test.done"


def test_an_event_without_a_type_is_a_usage_error(cli, workdir) -> None:
    result = cli("run", "two-events.yaml", "--ephemeral", "--event", '{"data": 1}')
    assert result.code == 2
    assert "CloudEvent" in result.err


def test_progress_lines_name_each_state_entered() -> None:
    import io

    stream = io.StringIO()
    printer = ProgressPrinter(stream)
    printer({"seq": 0, "at": 10.0, "event": "workflow_started", "instance_id": "i-1"})
    printer({"seq": 1, "at": 10.5, "event": "state_entered", "state": "Approve"})
    printer({"seq": 2, "at": 11.0, "event": "state_failed", "state": "Approve"})
    printer({"seq": 3, "at": 11.5, "event": "workflow_failed"})
    assert stream.getvalue().splitlines() == ["instance i-1", "  → Approve  +0.500s", "  ✗ Approve  +1.000s"]


def test_ephemeral_runs_import_nothing_durable_or_ai(workdir) -> None:
    probe = (
        "import sys\n"
        "from xflow_runtime.cli.main import main\n"
        "code = main(['run', 'greet.yaml', '--ephemeral'])\n"
        "heavy = sorted(m for m in ('dbos', 'litellm', 'sqlalchemy', 'tiktoken', 'httpx') if m in sys.modules)\n"
        "print(code, heavy, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=workdir, capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert done.stderr.strip().splitlines()[-1] == "0 []"


def test_an_interrupted_durable_run_says_how_to_resume(workdir) -> None:
    import os
    import signal
    import time

    (workdir / "waits.yaml").write_text(
        'id: waits\nspecVersion: "0.8"\nstart: Wait\nevents: [{name: Go, type: go, source: /t}]\n'
        "states:\n  - name: Wait\n    type: event\n    onEvents: [{eventRefs: [Go]}]\n    end: true\n")
    # A shell starts background jobs with SIGINT ignored, and children inherit that: when the test
    # suite itself runs in the background, the child would never see the interrupt. Give it the
    # default disposition, as a terminal would.
    process = subprocess.Popen([sys.executable, str(REPO / "bin" / "xflow"), "run", "waits.yaml", "--id", "w-1"],
                               cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(REPO)},
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not (workdir / ".xflow" / "xflow.sqlite").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # let it reach the wait
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130
    assert "xflow resume w-1" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("total, decision, status", [(50, None, "approved"), (120, True, "approved"),
                                                     (120, False, "rejected")])
def test_the_order_approval_example_runs_end_to_end(cli, workdir, engine, total, decision, status) -> None:
    arguments = ["run", str(REPO / "workflows" / "order-approval.yaml"), *engine, "--events-out", "out.jsonl",
                 "--input", json.dumps({"order": {"id": "A-1", "total": total}})]
    if decision is not None:
        arguments += ["--event", json.dumps({"type": "order.approval", "source": "/approvals",
                                             "data": {"approved": decision, "by": "ana"}})]
    result = cli(*arguments)
    assert result.code == 0, result.err
    assert result.json()["status"] == status
    assert result.json()["grossTotal"] == round(total * 1.21, 2)
    [produced] = [json.loads(line) for line in (workdir / "out.jsonl").read_text().splitlines()]
    assert produced["data"] == {"order": "A-1", "status": status}


@pytest.mark.parametrize("command", [["run", "greet.yaml"], ["list"], ["show", "x"]])
def test_an_unreachable_store_is_a_clear_error_without_the_password(cli, workdir, command) -> None:
    result = cli(*command, "--db", "postgresql://user:hunter2pw@127.0.0.1:1/nodb")
    assert result.code == 1
    assert "cannot open the durable store postgresql://user:***@127.0.0.1:1/nodb" in result.err
    assert "hunter2pw" not in result.err and "Traceback" not in result.err


def test_an_unsupported_store_url_is_a_clear_error(cli, workdir) -> None:
    result = cli("run", "greet.yaml", "--db", "mysql://user:pw@host/db")
    assert result.code == 1
    assert "unsupported database URL 'mysql://user:***@host/db'" in result.err
