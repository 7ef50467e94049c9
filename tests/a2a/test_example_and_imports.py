"""The A2A example (``workflows/a2a-ledger.yaml``) as written, in process, against the real test
agent: an input-required task is routed to the user and their answer continues the same task.
And the cost when unused: validating an A2A workflow imports nothing of the SDK."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.a2a.agent_server import build_app
from tests.service.support import ROOT, free_port

EXAMPLE = ROOT / "workflows" / "a2a-ledger.yaml"


def test_the_example_routes_the_agents_question_to_the_user_and_continues_the_task(tmp_path: Path) -> None:
    import uvicorn

    from xflow_runtime.functions.context import HttpSettings
    from xflow_runtime.runtime import Runtime

    port = free_port()
    calls = tmp_path / "calls.jsonl"

    async def scenario() -> dict:
        server = uvicorn.Server(uvicorn.Config(build_app(f"http://127.0.0.1:{port}/", calls), host="127.0.0.1",
                                               port=port, log_level="warning"))
        serving = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.05)
        try:
            runtime = Runtime(chat_memory=False, http=HttpSettings(base_urls={"ledger": f"http://127.0.0.1:{port}"}))
            handle = await runtime.start(runtime.load(EXAMPLE), {"request": "ask for the balance"})
            await runtime.send_message(handle.instance_id, "ACC-7")
            output = await asyncio.wait_for(handle.result(), 120)
            await runtime.close()
            return output
        finally:
            server.should_exit = True
            await serving

    output = asyncio.run(scenario())
    assert output["answer"] == {"account": "ACC-7"} and output["answered"] is True
    lines = [json.loads(line) for line in calls.read_text().splitlines()]
    assert [line["event"] for line in lines] == ["started", "input-required", "started", "completed"]
    assert len({line["task_id"] for line in lines}) == 1  # the answer continued the same task


def test_validating_an_a2a_workflow_imports_nothing_of_the_sdk() -> None:
    probe = (
        "import sys\n"
        "from xflow_runtime.cli.main import main\n"
        f"code = main(['validate', {str(EXAMPLE)!r}])\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'a2a', 'google', 'httpx', 'starlette'})\n"
        "print(code, heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.stdout.strip() == "0 []", result.stdout + result.stderr


@pytest.mark.parametrize("operation", ["agents.example.com/card.json", "ftp://x/card.json", "  "])
def test_an_a2a_function_needs_an_http_card_url(operation: str) -> None:
    from xflow_runtime.errors import DefinitionError
    from xflow_runtime.plan.functions import compile_function_def

    with pytest.raises(DefinitionError):
        compile_function_def({"name": "f", "type": "a2a", "operation": operation}, {}, None)
