"""``xflow run --llm-script`` and ``xflow chat`` end to end, as a user runs them (no API key)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def xflow(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    return subprocess.run([sys.executable, str(ROOT / "bin" / "xflow"), *args], input=stdin, capture_output=True,
                          text=True, timeout=120, env=env, cwd=cwd)


@pytest.mark.slow
def test_run_the_support_agent_example_from_a_reply_script(tmp_path):
    done = xflow("run", str(ROOT / "workflows/support-agent.yaml"), "--ephemeral",
                 "--llm-script", str(ROOT / "workflows/support-agent.replies.yaml"),
                 "--input", json.dumps({"customer": {"name": "Ann"}, "question": "How do refunds work?"}), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    assert output["status"] == "answered"
    assert output["sources"] == ["https://docs.example.com/search?q=refund+policy"]


def test_the_minimal_agent_example_runs_without_output_or_outcomes(tmp_path):
    done = xflow("validate", str(ROOT / "workflows/minimal-agent.yaml"))
    assert done.returncode == 0 and "0 error(s), 0 warning(s)" in done.stderr, done.stdout + done.stderr
    done = xflow("run", str(ROOT / "workflows/minimal-agent.yaml"), "--ephemeral",
                 "--llm-script", str(ROOT / "workflows/minimal-agent.replies.yaml"),
                 "--input", json.dumps({"question": "Capital of France?"}), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"question": "Capital of France?", "response": "Paris is the capital of France."}


def test_a_missing_reply_script_is_a_usage_error(tmp_path):
    done = xflow("run", str(ROOT / "workflows/support-agent.yaml"), "--ephemeral", "--llm-script", "nope.yaml",
                 cwd=tmp_path)
    assert done.returncode == 2
    assert "cannot read reply script nope.yaml" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_chat_in_the_terminal_until_the_agent_finishes(tmp_path):
    done = xflow("chat", str(ROOT / "workflows/concierge-chat.yaml"),
                 "--llm-script", str(ROOT / "workflows/concierge-chat.replies.yaml"),
                 stdin="Hello\nA table for two at 8, please\nThanks, bye\n", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.replace("you> ", "").splitlines()
    assert lines[:2] == ["agent> Good evening! How can I help you?", "agent> Your table for two is booked at 8pm."]
    # the last answer streams too, before the output (it used to be shown only inside the output)
    assert lines[2] == "agent> Enjoy your stay, goodbye!"
    assert json.loads(lines[3])["farewell"] == "Enjoy your stay, goodbye!"


async def test_chat_quits_on_end_of_input_and_prints_nothing_more(scripted_model, tmp_path):
    import io

    from xflow_runtime.cli.chat import Chat
    from xflow_runtime.llm.client import LLMSettings, configure_default_client

    scripted_model.set_script([{"json": {"response": "Good evening!"}}])
    configure_default_client(LLMSettings(api_base=scripted_model.api_base))
    try:
        out = io.StringIO()
        code = await Chat(io.StringIO("Hello\n"), out).run(ROOT / "workflows/concierge-chat.yaml", {}, {})
    finally:
        configure_default_client(None)
    assert code == 0
    assert out.getvalue() == "you> agent> Good evening!\nyou> \n"
    assert scripted_model.chat_requests[0].messages[-1] == {"role": "user", "content": "Hello"}


async def test_chat_writes_the_reply_as_the_model_streams_it(scripted_model):
    import io

    from xflow_runtime.cli.chat import Chat
    from xflow_runtime.llm.client import LLMSettings, configure_default_client

    class Writes(io.StringIO):
        def __init__(self) -> None:
            super().__init__()
            self.pieces: list[str] = []

        def write(self, text: str) -> int:
            self.pieces.append(text)
            return super().write(text)

    scripted_model.set_script([{"json": {"response": "Good evening! How can I help?"}}])
    configure_default_client(LLMSettings(api_base=scripted_model.api_base))
    try:
        out = Writes()
        await Chat(io.StringIO("Hello\n"), out).run(ROOT / "workflows/concierge-chat.yaml", {}, {})
    finally:
        configure_default_client(None)
    assert out.getvalue() == "you> agent> Good evening! How can I help?\nyou> \n"
    reply_pieces = out.pieces[out.pieces.index("agent> ") + 1:out.pieces.index("\n")]
    assert len(reply_pieces) >= 2 and "".join(reply_pieces) == "Good evening! How can I help?"
    assert scripted_model.chat_requests[0].body.get("stream") is True


@pytest.mark.slow
def test_xflow_chat_talks_with_a_facilitator_and_a_relay(tmp_path):
    done = xflow("chat", str(ROOT / "workflows/signup-facilitator.yaml"), "--ephemeral", "--input", '{"name": "Ann"}',
                 "--llm-script", str(ROOT / "workflows/signup-facilitator.replies.yaml"),
                 stdin="sign me up\nann-at-example\nI am 34\nann@example.com\n", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "agent> That email does not look right" in done.stdout
    assert json.loads(done.stdout.strip().splitlines()[-1])["profile"] == {"name": "Ann", "age": 34,
                                                                        "email": "ann@example.com"}
    done = xflow("chat", str(ROOT / "workflows/relay-question.yaml"), "--ephemeral", "--input", '{"order": "A-17"}',
                 stdin="hello\ntoday\n", cwd=tmp_path)
    assert done.returncode == 0 and "agent> Your order A-17 is ready" in done.stdout, done.stderr
