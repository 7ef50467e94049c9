"""``mcpServers`` and MCP tools in definitions: the schema reports mistakes at their path,
``xflow validate`` does not import the SDK, and the shipped example runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.schemas.validators import our_errors

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "workflows" / "mcp-calculator.yaml"


def document(**fields: object) -> dict:
    return {"id": "t", "specVersion": "0.8", "start": "S",
            "states": [{"name": "S", "type": "inject", "data": {}, "end": True}], **fields}


def test_schema_accepts_both_transports_and_the_tool_entries() -> None:
    assert our_errors(document(
        mcpServers=[{"name": "a", "transport": {"stdio": {"command": "x", "environment": {"K": "v"},
                                                           "inheritEnvironment": ["PATH"]}}},
                    {"name": "b", "transport": {"http": {"endpoint": "https://h/mcp", "headers": {"X": "1"}}},
                     "authRef": "t", "timeout": "PT5S", "protocol": "legacy", "toolPrefix": "bb"}],
        functions=[{"name": "f", "type": "mcp", "operation": "a#tool.x"}])) == []


@pytest.mark.parametrize("server, path", [
    ({"name": "a", "transport": {}}, "$.mcpServers[0].transport"),
    ({"name": "a#b", "transport": {"stdio": {"command": "x"}}}, "$.mcpServers[0].name"),
    ({"name": "a", "transport": {"stdio": {"command": "x"}}, "protocol": "2025-06-18"}, "$.mcpServers[0].protocol"),
    ({"name": "a", "transport": {"stdio": {"command": "x", "environment": {"BAD-NAME": "v"}}}},
     "$.mcpServers[0].transport.stdio.environment"),
    ({"name": "a", "transport": {"http": {"endpoint": "https://h"}}, "toolPrefix": "a.b"},
     "$.mcpServers[0].toolPrefix"),
    ({"name": "a", "transport": {"stdio": {"command": "x"}}, "extra": 1}, "$.mcpServers[0]"),
])
def test_schema_reports_mistakes_at_their_path(server: dict, path: str) -> None:
    errors = our_errors(document(mcpServers=[server]))
    assert errors and {where for where, _ in errors} == {path}, errors


def test_validate_does_not_import_the_sdk() -> None:
    code = ("import sys\nfrom xflow_runtime.cli.main import main\n"
            f"code = main(['validate', {str(EXAMPLE)!r}])\n"
            "loaded = [m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types', 'httpx2'))]\n"
            "print(code, loaded)")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.stdout.strip().splitlines()[-1] == "0 []", result.stdout + result.stderr


@pytest.mark.slow
def test_the_example_runs() -> None:
    pytest.importorskip("mcp")
    result = subprocess.run([sys.executable, str(REPO / "bin" / "xflow"), "run", str(EXAMPLE), "--ephemeral",
                             "--llm-script", str(EXAMPLE.with_suffix(".replies.yaml")),
                             "--input", json.dumps({"question": "What is 6 times 7, plus 1?"})],
                            cwd=REPO, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert output["answer"] == {"response": "6 times 7 is 42, plus 1 is 43."}
    assert output["check"] == {"total": 42.0}
