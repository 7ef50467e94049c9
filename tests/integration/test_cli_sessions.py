"""The command line as a user runs it: ``xflow chat --memory-id`` continues a conversation in a
later session, and ``xflow show`` prints the token usage of a durable agent run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.workflows import MEMORY_CHAT

ROOT = Path(__file__).resolve().parents[2]

CHAT = MEMORY_CHAT


def xflow(*args: str, stdin: str | None = None, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI") and k != "XFLOW_DATABASE_URL"}
    return subprocess.run([sys.executable, str(ROOT / "bin" / "xflow"), *args], input=stdin, capture_output=True,
                          text=True, timeout=120, env=env, cwd=cwd)


def said(text: str, done: bool = False) -> str:
    return json.dumps({"response": text, "done": done} if done else {"response": text})


@pytest.mark.slow
def test_a_second_chat_session_continues_the_conversation_of_its_memory_id(scripted_model, tmp_path):
    workflow = tmp_path / "chat.yaml"
    workflow.write_text(CHAT.replace("BASE", scripted_model.api_base))
    scripted_model.set_script([{"json": {"response": "Noted: tea."}},
                               {"json": {"response": "Bye.", "done": True}},
                               {"json": {"response": "You like tea.", "done": True}}])
    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    first = xflow("chat", str(workflow), "--memory-id", "m-1", "--db", db, "--user", "ann",
                  stdin="I like tea\nbye\n", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    second = xflow("chat", str(workflow), "--memory-id", "m-1", "--db", db, "--user", "ann",
                   stdin="What do I like?\n", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert "You like tea." in second.stdout
    opening = scripted_model.chat_requests[2]  # the second session's first LLM request
    assert [m["content"] for m in opening.messages if m["role"] != "system"] == [
        "I like tea", said("Noted: tea."), "bye", said("Bye.", True), "What do I like?"]
    assert (tmp_path / "xflow.db").exists() and not (tmp_path / ".xflow").exists()


@pytest.mark.slow
def test_xflow_show_prints_the_token_usage_of_a_durable_agent_run(tmp_path):
    done = xflow("run", str(ROOT / "workflows/support-agent.yaml"), "--id", "agent-1",
                 "--llm-script", str(ROOT / "workflows/support-agent.replies.yaml"),
                 "--input", json.dumps({"customer": {"name": "Ann"}, "question": "How do refunds work?"}), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    shown = xflow("show", "agent-1", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    described = json.loads(shown.stdout)
    assert (described["tenant"], described["user"]) == ("default", None)
    usage = described["usage"]
    assert usage["calls"] >= 1 and usage["total_tokens"] > 0 and usage["prompt_tokens"] > 0
    agent_visits = [visit for visit in described["states"] if visit.get("usage")]
    assert agent_visits and sum(v["usage"]["calls"] for v in agent_visits) == usage["calls"]
    assert "cost" in usage


USER_SCOPED = CHAT.replace("memory: {memoryId: '${ .memoryId }', maxMessages: 20}", "memory: {scope: user, maxMessages: 20}")


@pytest.mark.slow
def test_xflow_run_scopes_user_memory_by_tenant_and_user(scripted_model, tmp_path):
    workflow = tmp_path / "ask.yaml"
    workflow.write_text(USER_SCOPED.replace("BASE", scripted_model.api_base))
    scripted_model.set_script([{"json": {"response": text, "done": True}} for text in ("Noted.", "You like tea.")])
    # (a second tenant or user seeing nothing is pinned through the API in test_agent_history.py)
    runs = [("I like tea", "ann", "acme"), ("What do I like?", "ann", "acme")]
    for message, user, tenant in runs:
        done = xflow("run", str(workflow), "--input", json.dumps({"message": message}), "--user", user,
                     "--tenant", tenant, "-q", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    requests = scripted_model.chat_requests
    assert [m["content"] for m in requests[1].messages if m["role"] != "system"] == [
        "I like tea", said("Noted.", True), "What do I like?"]
    assert (tmp_path / ".xflow" / "xflow.db").exists()


def test_a_missing_subflow_file_is_a_clear_error(tmp_path):
    (tmp_path / "main.yaml").write_text("id: m\nspecVersion: '0.8'\nstart: a\nstates: [{name: a, type: inject, data: {}, end: true}]\n")
    done = xflow("run", str(tmp_path / "main.yaml"), "--ephemeral", "--workflow", "nope.yaml", cwd=tmp_path)
    assert done.returncode == 1
    assert "cannot read workflow file nope.yaml" in done.stderr and "Traceback" not in done.stderr
