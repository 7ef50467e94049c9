"""The bug of the issue, as a new user meets it: with only ``XFLOW_DATABASE_URL`` set, ``xflow run
--user`` stores a conversation; every ``xflow memory`` command, with the same environment, finds
what the run stored, ``export-user`` writes it, ``erase-user`` erases it from both stores, and a
second export is empty. A store without memory tables is reported, never created."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect

from tests.privacy.conftest import agent_workflow
from tests.privacy.scan import traces
from xflow_runtime.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
PHRASE = "wombatlighthouse"

WORKFLOW = agent_workflow("cli-privacy", "longTermMemory: {enabled: true}")

SCRIPT = [{"tool_calls": [{"name": "memory_write", "arguments": {"title": "Lighthouse", "content": PHRASE}}]},
          {"json": {"response": f"Noted {PHRASE}", "done": True}}]


def memory(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["memory", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_memory_commands_find_what_xflow_run_stored_with_the_same_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "data" / "xflow.sqlite"
    url = f"sqlite:///{store}"
    (tmp_path / "chat.yaml").write_text(WORKFLOW)
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env["XFLOW_DATABASE_URL"] = url
    ran = subprocess.run([sys.executable, str(ROOT / "bin" / "xflow"), "run", "chat.yaml", "--tenant", "acme",
                          "--user", "u-1", "--llm-script", "script.json", "--quiet",
                          "--input", json.dumps({"message": f"remember {PHRASE}"})],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert ran.returncode == 0, ran.stderr

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XFLOW_DATABASE_URL", url)
    code, out, err = memory(capsys, "chats", "--tenant", "acme", "--json")
    assert code == 0, err
    (chat,) = [json.loads(line) for line in out.splitlines()]
    assert (chat["user"], chat["agent"]) == ("u-1", "concierge")
    code, out, _ = memory(capsys, "history", chat["id"], "--tenant", "acme")
    assert code == 0 and f"user: remember {PHRASE}" in out
    code, out, _ = memory(capsys, "memories", "list", "--tenant", "acme", "--agent", "concierge", "--user", "u-1")
    assert code == 0 and f"Lighthouse: {PHRASE}" in out

    code, _, _ = memory(capsys, "export-user", "u-1", "--tenant", "acme", "--output", "export.json")
    exported = json.loads((tmp_path / "export.json").read_text())
    assert code == 0 and len(exported["memory"]["chats"]) == 1 and len(exported["instances"]) == 1
    assert exported["instances"][0]["output"]["response"] == f"Noted {PHRASE}"

    code, out, err = memory(capsys, "erase-user", "u-1", "--tenant", "acme", "--json")
    receipt = json.loads(out)
    assert code == 0, err
    assert receipt["stores"]["memory"]["deleted"]["chat_messages"] == 4
    assert receipt["stores"]["memory"]["deleted"]["memories"] == 1
    assert receipt["stores"]["durable"]["deleted"]["workflow_status"] == 1
    assert receipt["stores"]["durable"]["deleted"]["operation_outputs"] > 0

    code, out, _ = memory(capsys, "export-user", "u-1", "--tenant", "acme")
    after = json.loads(out)
    assert code == 0 and after["memory"]["chats"] == [] and after["instances"] == []
    for database in (url, f"sqlite:///{store.parent / 'xflow.db'}"):
        assert traces(database, [PHRASE, "u-1"]) == {}
    engine = create_engine(url)
    assert not [t for t in inspect(engine).get_table_names() if t.startswith("xflow_")], \
        "no memory tables were created inside the durable store"
    engine.dispose()
    code, out, _ = memory(capsys, "erase-user", "u-1", "--tenant", "acme")
    assert code == 0 and "0 rows" in out


def test_a_store_without_memory_tables_is_reported_not_created(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("XFLOW_DATABASE_URL", f"sqlite:///{tmp_path / 'empty' / 'xflow.sqlite'}")
    code, _, err = memory(capsys, "chats")
    assert code == 1 and "Traceback" not in err
    assert f"no chat or long-term memory at sqlite:///{tmp_path / 'empty' / 'xflow.db'}" in err
    assert "from $XFLOW_DATABASE_URL" in err
    code, _, err = memory(capsys, "memories", "list", "--agent", "a", "--db", f"sqlite:///{tmp_path / 'x.sqlite'}")
    assert code == 1 and f"{tmp_path / 'xflow.db'}" in err and "from --db" in err
    assert not (tmp_path / "empty").exists() and not (tmp_path / "xflow.db").exists()
    code, out, _ = memory(capsys, "erase-user", "u-1", "--json")  # nothing anywhere: zeros, no store made
    receipt = json.loads(out)
    assert code == 0 and receipt["stores"]["memory"]["present"] is False
    assert receipt["stores"]["durable"]["present"] is False and not (tmp_path / "empty").exists()
