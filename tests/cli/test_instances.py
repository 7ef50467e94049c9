"""``xflow list``, ``xflow show ID`` and ``xflow resume ID`` on the durable store."""

from __future__ import annotations

import json

import pytest


def test_list_on_an_empty_store_says_so(cli, workdir) -> None:
    result = cli("list")
    assert result.code == 0
    assert "no instances" in result.err


def test_list_shows_every_instance_with_its_status(cli, workdir) -> None:
    assert cli("run", "greet.yaml", "--id", "good-1").code == 0
    assert cli("run", "fails.yaml", "--id", "bad-1").code == 1
    table = cli("list")
    assert table.code == 0
    rows = {line.split()[0]: line.split()[1] for line in table.out.splitlines()[1:]}
    assert rows == {"good-1": "SUCCESS", "bad-1": "ERROR"}
    as_json = [json.loads(line) for line in cli("list", "--json", "--status", "error").out.splitlines()]
    assert [(r["instance_id"], r["workflow"]) for r in as_json] == [("bad-1", "fails")]
    assert as_json[0]["file"].endswith("fails.yaml")


def test_show_reports_states_inputs_outputs_durations_and_a_usage_field(cli, workdir) -> None:
    assert cli("run", "greet.yaml", "--id", "shown", "--input", '{"name": "Ada"}').code == 0
    shown = cli("show", "shown")
    assert shown.code == 0, shown.err
    described = json.loads(shown.out)
    assert described["status"] == "SUCCESS"
    assert described["input"] == {"name": "Ada"}
    assert described["output"] == {"greeting": "hello", "name": "Ada", "token": None}
    [visit] = described["states"]
    assert visit["state"] == "Greet"
    assert visit["input"] == {"name": "Ada"}
    assert visit["output"] == described["output"]
    assert visit["duration"] >= 0
    assert "usage" in visit and "usage" in described  # filled by AI states (tokens, cost)


def test_show_reports_the_error_of_a_failed_instance(cli, workdir) -> None:
    assert cli("run", "fails.yaml", "--id", "broken").code == 1
    described = json.loads(cli("show", "broken").out)
    assert described["status"] == "ERROR"
    assert "the order is broken" in described["error"]["message"]
    assert described["states"][0]["state"] == "Explode"
    assert described["states"][0]["error"] is not None


def test_secrets_are_not_recorded_in_the_store(cli, workdir) -> None:
    (workdir / "uses-secret.yaml").write_text("""
id: uses-secret
specVersion: "0.8"
start: Check
secrets: [token]
states:
  - name: Check
    type: inject
    data: {}
    stateDataFilter:
      output: '${ {authorized: ($SECRETS.token == "do-not-store-me")} }'
    end: true
""")
    run = cli("run", "uses-secret.yaml", "--id", "secretive", "--secret", "token=do-not-store-me")
    assert run.json() == {"authorized": True}
    shown = cli("show", "secretive").out
    assert "do-not-store-me" not in shown  # request, history and output as recorded
    assert json.loads(shown)["input"] == {}


def test_unknown_ids_are_clear_errors(cli, workdir) -> None:
    assert cli("run", "greet.yaml").code == 0  # the store exists
    for command in ("show", "resume"):
        result = cli(command, "no-such-instance")
        assert result.code == 1
        assert "no instance 'no-such-instance'" in result.err
        assert "Traceback" not in result.err


def test_running_again_with_the_same_id_attaches_to_the_instance(cli, workdir) -> None:
    first = cli("run", "greet.yaml", "--id", "once", "--input", '{"name": "A"}')
    second = cli("run", "greet.yaml", "--id", "once", "--input", '{"name": "A"}')
    assert first.json() == second.json()
    assert len(cli("list", "--json").out.splitlines()) == 1


def test_resuming_a_finished_instance_prints_its_output(cli, workdir) -> None:
    assert cli("run", "greet.yaml", "--id", "done", "--input", '{"name": "B"}').code == 0
    resumed = cli("resume", "done")
    assert resumed.code == 0, resumed.err
    assert resumed.json()["name"] == "B"


@pytest.mark.postgres
def test_run_list_and_show_on_postgresql(cli, workdir, postgres_database_url: str) -> None:
    run = cli("run", "greet.yaml", "--db", postgres_database_url, "--id", "on-pg", "--input", '{"name": "P"}')
    assert run.code == 0, run.err
    assert run.json()["name"] == "P"
    rows = [json.loads(line) for line in cli("list", "--db", postgres_database_url, "--json").out.splitlines()]
    assert [(r["instance_id"], r["status"]) for r in rows] == [("on-pg", "SUCCESS")]
    shown = json.loads(cli("show", "on-pg", "--db", postgres_database_url).out)
    assert [visit["state"] for visit in shown["states"]] == ["Greet"]
    assert not (workdir / ".xflow").exists()  # nothing went to the default SQLite store
