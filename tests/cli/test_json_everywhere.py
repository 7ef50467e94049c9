"""One output convention: every command that prints data prints JSON with ``--json`` (parsed
here, command by command), and times are ISO 8601 with their zone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.workflows import MEMORY_CHAT
from xflow_runtime.cli.main import ALL, build_parser

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")

WAITS = """
id: waits
specVersion: "0.8"
start: Wait
events: [{name: Go, type: go, source: /t}]
states:
  - name: Wait
    type: event
    onEvents: [{eventRefs: [Go], eventDataFilter: {toStateData: "${ .got }"}}]
    end: true
"""

CHAT = MEMORY_CHAT.replace("id: memory-chat", "id: json-chat")

#: commands whose output is not data: a shell script
NOT_DATA = {"completion", "serve", "worker"}
#: clients of a running service: their --json is checked against a real one (tests/human_states)
NEEDS_SERVICE = {"tasks"}


def _commands(parser, path=()):
    """Every leaf command path of the full parser, e.g. ("memory", "memories", "list")."""
    import argparse

    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path
        return
    for name, sub in subs[0].choices.items():
        yield from _commands(sub, (*path, name))


def parsed(result, *, lines: bool = False):
    assert result.code == 0, result.err
    if lines:
        return [json.loads(line) for line in result.out.splitlines() if line.strip()]
    return json.loads(result.out)


@pytest.mark.slow
def test_every_command_prints_json_with_the_json_flag(cli, workdir: Path, scripted_model) -> None:
    covered: set[tuple[str, ...]] = set()

    def run(*args: str, lines: bool = False, stdin: str | None = None):
        words = tuple(a for a in args if not a.startswith("-"))
        for size in range(len(words), 0, -1):  # record the command path the arguments start with
            if words[:size] in leaves:
                covered.add(words[:size])
                break
        return parsed(cli(*args, "--json", stdin=stdin), lines=lines)

    leaves = set(_commands(build_parser(ALL)))
    (workdir / "waits.yaml").write_text(WAITS)
    (workdir / "chat.yaml").write_text(CHAT.replace("BASE", scripted_model.api_base))

    assert run("validate", "greet.yaml")["valid"] is True
    assert "workflow" in [entry["name"] for entry in run("schema", "--list")]
    assert run("run", "greet.yaml", "--ephemeral")["greeting"] == "hello"

    detached = run("run", "waits.yaml", "--detach")
    instance = detached["instance_id"]
    assert detached["waiting_for"]["events"][0]["type"] == "go"
    assert detached["deliver"][0].startswith(f"xflow send {instance} --event ")
    assert run("send", instance, "--event", '{"type": "go", "source": "/t", "data": {"n": 1}}',
               "--no-wait") == {"instance_id": instance, "delivered": 1}
    assert run("resume", instance) == {"got": {"n": 1}}
    [row] = run("list", lines=True)
    assert row["instance_id"] == instance and ISO.match(row["created_at"])
    shown = run("show", instance)
    assert shown["status"] == "SUCCESS" and ISO.match(shown["states"][0]["entered_at"])

    scripted_model.set_script([{"json": {"response": "Hello!"}}, {"json": {"response": "Bye.", "done": True}}])
    said = run("chat", "chat.yaml", "--memory-id", "m-1", lines=True, stdin="hi\nbye\n")
    assert said[0] == {"reply": "Hello!"} and said[-1]["output"]["response"] == "Bye."

    [chat] = run("memory", "chats", lines=True)
    assert ISO.match(chat["updated_at"])
    assert len(run("memory", "history", chat["id"], lines=True)) == 4
    created = run("memory", "memories", "create", "--agent", "concierge", "--title", "Tone", "--content", "brief")
    assert ISO.match(created["created_at"]) and ISO.match(created["updated_at"])
    assert run("memory", "memories", "get", str(created["id"]), "--agent", "concierge")["title"] == "Tone"
    assert run("memory", "memories", "update", str(created["id"]), "--agent", "concierge",
               "--content", "very brief")["content"] == "very brief"
    assert [m["id"] for m in run("memory", "memories", "list", "--agent", "concierge", lines=True)] == [created["id"]]
    assert run("memory", "memories", "delete", str(created["id"]), "--agent", "concierge") == {"deleted": str(created["id"])}
    assert run("memory", "consent", "ann", "--refuse") == {"tenant": "default", "user": "ann", "consent": False}
    assert run("memory", "export-user", "ann")["user"] == "ann"
    assert run("memory", "erase-user", "ann")["user"] == "ann"
    assert run("memory", "reindex", "--embedding-model", "openai/text-embedding-3-small",
               "--api-base", scripted_model.api_base)["memories"] == 0
    assert run("memory", "index-scopes")["built"] == []  # SQLite: no scope indexes (exact search)
    key = run("keys", "create", "--tenant", "acme", "--name", "ops")
    assert [row["id"] for row in run("keys", "list", "--tenant", "acme", lines=True)] == [key["id"]]
    assert run("keys", "revoke", key["id"]) == {"revoked": key["id"]}
    assert run("memory", "delete", chat["id"]) == {"chat_id": chat["id"], "deleted_messages": 4}
    assert run("memory", "clear", "m-1") == {"memory_id": "m-1", "deleted_messages": 0}

    missing = {leaf for leaf in leaves if leaf[0] not in NOT_DATA | NEEDS_SERVICE} - covered
    assert not missing, f"commands without a --json check: {sorted(missing)}"
