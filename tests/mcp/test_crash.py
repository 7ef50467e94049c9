"""SIGKILL during an MCP tool call of an agent, then resume: no completed call runs again, the
resumed visit offers the tool list it had (although the server changed), and the instance ends
with the output of an uninterrupted run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine.crash_support import REPO, XFLOW, sigkill_when

pytest.importorskip("mcp")

AGENT = """
id: mcp-crash
specVersion: '0.8'
start: ask
mcpServers:
  - name: calc
    timeout: PT120S
    transport:
      stdio:
        command: PYTHON_EXE
        arguments: [-m, tests.mcp.servers]
        cwd: REPO_DIR
        inheritEnvironment: [PYTHONPATH, XFLOW_MCP_CALL_LOG, XFLOW_MCP_EXTRA_TOOL_FILE]
states:
  - name: ask
    type: aiagent
    agentName: calculator
    userMessage: '${ .question }'
    llmConfig: {provider: openai, apiKey: sk-test, baseUrl: BASE, overrideParams: {model: gpt-4o-mini}}
    tools:
      - mcp: {server: calc, exclude: [environment, favourite]}
    agentOutcomes:
      - finish: true
        dataFilter: {data: '${ {answer: .returnValues.response, calls: [.toolCalls[] | {name, result}]} }', toStateData: '${ .agent }'}
    end: true
"""


def script(release: Path) -> list[dict]:
    return [
        {"tool_calls": [{"name": "calc_add", "arguments": {"a": 1, "b": 2}}]},
        {"tool_calls": [{"name": "calc_wait_for", "arguments": {"path": str(release), "tag": "xyz"}}]},
        {"text": "the answer is 3"},
    ]


def lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.slow
def test_sigkill_during_an_mcp_call_then_resume(scripted_model, tmp_path: Path) -> None:
    workflow = tmp_path / "agent.yaml"
    workflow.write_text(AGENT.replace("PYTHON_EXE", sys.executable).replace("REPO_DIR", str(REPO))
                        .replace("BASE", scripted_model.api_base))
    extra = tmp_path / "server-changed"
    release = tmp_path / "release"

    def env(log: Path) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(REPO), "XFLOW_MCP_CALL_LOG": str(log),
                "XFLOW_MCP_EXTRA_TOOL_FILE": str(extra)}

    # the uninterrupted run
    release.touch()
    scripted_model.set_script(script(release))
    reference_log = tmp_path / "reference.log"
    reference = subprocess.run([*XFLOW, "run", str(workflow), "--ephemeral", "--input",
                                json.dumps({"question": "1+2?"})], cwd=REPO, capture_output=True, text=True,
                               timeout=180, env=env(reference_log))
    assert reference.returncode == 0, reference.stderr
    expected = json.loads(reference.stdout)
    assert expected["agent"] == {"answer": "the answer is 3",
                                 "calls": [{"name": "calc_add", "result": {"total": 3}},
                                           {"name": "calc_wait_for", "result": {"total": 3}}]}
    release.unlink()

    scripted_model.reset(script(release))
    log = tmp_path / "crash.log"
    db = f"sqlite:///{tmp_path / 'crash.sqlite'}"
    process = subprocess.Popen([*XFLOW, "run", str(workflow), "--db", db, "--id", "mcp-1", "--input",
                                json.dumps({"question": "1+2?"})], cwd=REPO, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env(log))
    assert sigkill_when(process, lambda: "start wait_for xyz" in lines(log), timeout=120)
    offered_before = scripted_model.chat_requests[-1].tool_names
    assert len(scripted_model.chat_requests) == 2

    extra.touch()  # the server now offers one more tool: the resumed visit must not see it
    release.touch()
    resumed = subprocess.run([*XFLOW, "resume", "mcp-1", "--db", db], cwd=REPO, capture_output=True, text=True,
                             timeout=180, env=env(log))
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == expected

    calls = lines(log)
    assert calls.count("done add 1 2") == 1, calls  # completed before the kill: never repeated
    # the call in flight at the kill runs again (it may also have finished in the orphaned server)
    assert calls.count("start wait_for xyz") == 2 and calls.count("done wait_for xyz") in (1, 2), calls
    requests = scripted_model.chat_requests
    assert len(requests) == 3  # the two LLM calls before the kill came from history
    assert requests[-1].tool_names == offered_before and "calc_late_tool" not in requests[-1].tool_names
