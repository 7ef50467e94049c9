"""``xflow chat`` on a real terminal (a pseudo-terminal): readline edits the line (Ctrl-B moves
back, as in any shell) and the history is kept in ``$XDG_STATE_HOME/xflow/chat_history``."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CHAT = """
id: terminal-chat
specVersion: '0.8'
start: chat
states:
  - name: chat
    type: aiagent
    agentName: concierge
    userMessage: '${ .message }'
    llmConfig: {provider: openai, apiKey: sk-test, baseUrl: BASE, overrideParams: {model: gpt-4o-mini}}
    output: {schema: {type: object, properties: {response: {type: string}, done: {type: boolean}}, required: [response]}}
    agentOutcomes:
      - {condition: '${ $agentOutcome.returnValues.done == true }', finish: true}
      - {finish: false}
    end: true
"""


def read_until(fd: int, marker: bytes, deadline: float) -> bytes:
    seen = b""
    while marker not in seen:
        if time.monotonic() > deadline:
            raise AssertionError(f"no {marker!r} in {seen!r}")
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                break
    return seen


@pytest.mark.slow
def test_chat_on_a_terminal_edits_lines_and_keeps_a_history(scripted_model, tmp_path: Path) -> None:
    (tmp_path / "chat.yaml").write_text(CHAT.replace("BASE", scripted_model.api_base))
    scripted_model.set_script([{"json": {"response": "Hi!"}}, {"json": {"response": "Bye.", "done": True}}])
    controller, terminal = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm",
           "NO_COLOR": "1"}
    process = subprocess.Popen([sys.executable, str(REPO / "bin" / "xflow"), "chat", "chat.yaml", "--ephemeral"],
                               cwd=tmp_path, stdin=terminal, stdout=terminal, stderr=terminal, env=env,
                               close_fds=True)
    os.close(terminal)
    try:
        deadline = time.monotonic() + 90
        read_until(controller, b"you> ", deadline)
        os.write(controller, b"hello wrld\x02\x02\x02o\r")  # Ctrl-B ×3, insert the missing "o"
        read_until(controller, b"agent> Hi!", deadline)
        read_until(controller, b"you> ", deadline)
        os.write(controller, b"bye\r")
        read_until(controller, b"Bye.", deadline)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)
    first = [m for m in scripted_model.chat_requests[0].messages if m["role"] == "user"]
    assert first[-1]["content"] == "hello world"
    history = (tmp_path / "state" / "xflow" / "chat_history").read_text().splitlines()
    assert history[-2:] == ["hello world", "bye"]
