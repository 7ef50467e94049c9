"""Functions of ``type: a2a`` in actions (specs/a2a.md §2), in process, against the real test agent
on 127.0.0.1: one blocking SendMessage per call; the result has the ``$agentOutcome`` shape; an
input-required task is a result that a second call continues by its ``taskId``; failure states are
error codes ``onErrors`` can catch."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.a2a.agent_server import build_app
from tests.service.support import free_port

WORKFLOW = """
id: a2a-function
version: '1.0'
specVersion: '0.8'
start: call
functions:
  - {name: ledger, type: a2a, operation: 'http://127.0.0.1:PORT'}
errors:
  - {name: failed, code: A2ATaskFailed}
states:
  - name: call
    type: operation
    actions:
      - functionRef: {refName: ledger, arguments: {text: '${ .first }'}}
        actionDataFilter: {toStateData: '${ .first_result }'}
    onErrors:
      - {errorRef: failed, transition: failed}
    transition: again
  - name: again
    type: switch
    dataConditions:
      - condition: '${ .first_result.status == "input-required" }'
        transition: answer
    defaultCondition: {end: true}
  - name: answer
    type: operation
    actions:
      - functionRef: {refName: ledger, arguments: {text: ACC-9, taskId: '${ .first_result.taskId }',
                                                   contextId: '${ .first_result.contextId }'}}
        actionDataFilter: {toStateData: '${ .second_result }'}
    end: true
  - {name: failed, type: inject, data: {failed: true}, end: true}
"""


def _run(tmp_path: Path, first: str) -> tuple[Any, list[dict[str, Any]]]:
    import uvicorn

    from xflow_runtime.runtime import Runtime

    port = free_port()
    calls = tmp_path / f"calls-{first.split()[0]}.jsonl"
    path = tmp_path / "a2a-function.yaml"
    path.write_text(WORKFLOW.replace("PORT", str(port)))

    async def scenario() -> Any:
        server = uvicorn.Server(uvicorn.Config(build_app(f"http://127.0.0.1:{port}/", calls), host="127.0.0.1",
                                               port=port, log_level="warning"))
        serving = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.05)
        try:
            runtime = Runtime(chat_memory=False)
            output = await (await runtime.start(runtime.load(path), {"first": first})).result()
            await runtime.close()
            return output
        finally:
            server.should_exit = True
            await serving

    output = asyncio.run(scenario())
    return output, [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []


def test_a_completed_task_is_the_result(tmp_path: Path) -> None:
    output, _ = _run(tmp_path, "echo hello")
    result = output["first_result"]
    assert result["status"] == "completed" and result["log"] == "echo: hello"
    assert result["returnValues"] == {"answer": "hello", "n": 42, "response": "echo: hello"}
    assert "second_result" not in output


def test_an_input_required_task_is_continued_by_its_task_id(tmp_path: Path) -> None:
    output, calls = _run(tmp_path, "ask for it")
    assert output["first_result"]["status"] == "input-required"
    assert output["first_result"]["log"] == "Which account?"
    assert output["second_result"]["returnValues"] == {"account": "ACC-9"}
    assert len({call["task_id"] for call in calls}) == 1


def test_a_failed_task_is_an_error_code_on_errors_catches(tmp_path: Path) -> None:
    output, _ = _run(tmp_path, "fail")
    assert output == {"first": "fail", "failed": True}
