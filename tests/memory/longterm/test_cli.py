"""``xflow memory memories|erase-user|consent`` against a real SQLite file."""

from __future__ import annotations

import json

import pytest

from xflow_runtime.cli.main import main
from xflow_runtime.settings import locate
from xflow_runtime.storage import open_database


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    """What ``--db`` names: the store as given to ``xflow run``; its memory (xflow.db beside it)
    exists, as after a run (memory commands never create one)."""
    url = f"sqlite:///{tmp_path / 'xflow.sqlite'}"
    open_database(locate(url).memory_url).dispose()
    return url


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["memory", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_memories_crud_from_the_command_line(sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    scope = ["--db", sqlite_url, "--tenant", "acme", "--agent", "support", "--user", "u1"]
    code, out, _ = run(capsys, "memories", "create", *scope, "--title", "Timezone", "--content", "UTC+9",
                       "--tag", "customer", "--json")
    assert code == 0
    created = json.loads(out)
    assert (created["title"], created["tags"]) == ("Timezone", ["customer"])
    code, _, err = run(capsys, "memories", "create", *scope, "--title", "timezone", "--content", "UTC+1")
    assert code == 1 and "already exists" in err and "Traceback" not in err
    code, out, _ = run(capsys, "memories", "update", created["id"], *scope, "--content", "UTC+1")
    assert code == 0 and "UTC+1" in out
    code, out, _ = run(capsys, "memories", "list", *scope, "--query", "utc")
    assert code == 0 and out.startswith(created["id"]) and "Timezone [customer]: UTC+1" in out
    code, out, _ = run(capsys, "memories", "list", "--db", sqlite_url, "--tenant", "acme", "--agent", "support")
    assert (code, out.strip()) == (0, "no memories")  # the agent's own memories are another scope
    code, out, _ = run(capsys, "memories", "delete", created["id"], *scope)
    assert code == 0
    code, _, err = run(capsys, "memories", "get", created["id"], *scope)
    assert code == 1 and "no memory" in err


def test_consent_and_erase_user(sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--db", sqlite_url, "--tenant", "acme"]
    run(capsys, "memories", "create", *common, "--agent", "a", "--user", "u1", "--title", "t", "--content", "c")
    code, out, _ = run(capsys, "consent", "u1", "--refuse", *common)
    assert code == 0 and "refused" in out
    code, out, _ = run(capsys, "consent", "u1", "--show", *common)
    assert "refused" in out
    code, out, _ = run(capsys, "erase-user", "u1", *common, "--json")
    receipt = json.loads(out)
    assert code == 0 and receipt["stores"]["memory"]["deleted"]["memories"] == 1 and receipt["user"] == "u1"
    assert receipt["stores"]["durable"]["present"] is False  # no run ever used this store
    code, out, _ = run(capsys, "erase-user", "u1", *common)
    assert code == 0 and "memories=0" in out


def test_usage_errors_exit_2(sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["memory", "memories", "list", "--db", sqlite_url])  # --agent is required
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit) as exit_info:
        main(["memory", "consent", "u1", "--db", sqlite_url])  # one of --allow/--refuse/--unset/--show
    assert exit_info.value.code == 2
