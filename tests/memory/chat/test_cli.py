"""``xflow memory chats|history|delete|clear`` against a real SQLite file."""

from __future__ import annotations

import json

import pytest

from tests.memory.chat.histories import turn
from xflow_runtime.cli.main import main
from xflow_runtime.memory.chat import ChatMemory, ChatScope
from xflow_runtime.settings import locate


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    """What ``--db`` names: the store as given to ``xflow run`` (memory is xflow.db beside it)."""
    return f"sqlite:///{tmp_path / 'xflow.sqlite'}"


@pytest.fixture
def seeded(sqlite_url: str) -> dict[str, str]:
    memory = ChatMemory.open(locate(sqlite_url).memory_url)
    ids = {}
    for user, session in (("alice", "s-1"), ("alice", "s-2"), ("bob", "s-1")):
        scope = ChatScope(agent="support", session=session, user=user, tenant="acme")
        result = memory.append_turn_sync(scope, turn(0, f"{user} {session}", [1]), model="gpt-4o")
        ids[f"{user}/{session}"] = result.chat_id
    memory.close()
    return ids


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["memory", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_chats_lists_a_users_chats(seeded: dict, sqlite_url: str, capsys) -> None:
    code, out, _ = run(capsys, "chats", "--db", sqlite_url, "--tenant", "acme", "--user", "alice",
                       "--json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["memory_id"] for r in rows] == ["s-2", "s-1"]
    assert {r["id"] for r in rows} == {seeded["alice/s-1"], seeded["alice/s-2"]}
    code, out, _ = run(capsys, "chats", "--db", sqlite_url, "--tenant", "other")
    assert (code, out.strip()) == (0, "no chats")


def test_history_prints_messages_with_tool_calls(seeded: dict, sqlite_url: str, capsys) -> None:
    code, out, _ = run(capsys, "history", seeded["bob/s-1"], "--db", sqlite_url, "--tenant", "acme")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "user: question 0: bob s-1"
    assert lines[1].startswith("assistant: → lookup(") and lines[2].startswith("tool[call_0_0_0]:")
    code, out, _ = run(capsys, "history", seeded["bob/s-1"], "--db", sqlite_url, "--tenant",
                       "acme", "--json")
    assert [json.loads(line)["role"] for line in out.splitlines()] == [
        "user", "assistant", "tool", "assistant"]


def test_delete_and_clear(seeded: dict, sqlite_url: str, capsys) -> None:
    code, out, _ = run(capsys, "delete", seeded["alice/s-2"], "--db", sqlite_url, "--tenant", "acme")
    assert (code, out.strip()) == (0, f"deleted chat {seeded['alice/s-2']} (4 messages)")
    code, out, _ = run(capsys, "clear", "s-1", "--db", sqlite_url, "--tenant", "acme", "--user", "bob")
    assert (code, out.strip()) == (0, "cleared memoryId 's-1' (4 messages)")
    code, out, _ = run(capsys, "chats", "--db", sqlite_url, "--tenant", "acme", "--json")
    assert [json.loads(line)["user"] for line in out.splitlines()] == ["alice"]


@pytest.mark.parametrize("argv", [
    ["history", "no-such-chat"],
    ["delete", "no-such-chat"],
])
def test_unknown_chat_is_a_one_line_error(argv: list[str], seeded: dict, sqlite_url: str,
                                          capsys) -> None:
    code, out, err = run(capsys, *argv, "--db", sqlite_url, "--tenant", "acme")
    assert code == 1 and out == ""
    assert err.strip() == "xflow memory: no chat 'no-such-chat' in tenant 'acme'"


def test_a_chat_of_another_tenant_is_not_found(seeded: dict, sqlite_url: str, capsys) -> None:
    code, _, err = run(capsys, "history", seeded["bob/s-1"], "--db", sqlite_url, "--tenant", "evil")
    assert code == 1 and "no chat" in err


def test_bad_database_url_is_a_clear_error(capsys) -> None:
    code, _, err = run(capsys, "chats", "--db", "nosuchdb://x/y")
    assert code == 1 and err.startswith("xflow memory: ") and "Traceback" not in err


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_in_memory_sqlite_is_refused_with_a_clear_error(url: str, capsys) -> None:
    code, _, err = run(capsys, "chats", "--db", url)
    assert code == 1 and "in-memory SQLite is not supported" in err


def test_missing_subcommand_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["memory"])
    assert exit_info.value.code == 2
