"""``xflow validate`` through the real command line (``bin/xflow``) in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.definition.helpers import BASE

REPO = Path(__file__).resolve().parents[2]
XFLOW = REPO / "bin" / "xflow"
MALFORMED = Path(__file__).parent / "malformed"


def _xflow(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(XFLOW), *map(str, args)], capture_output=True, text=True,
                          timeout=60, cwd=REPO)


@pytest.fixture()
def valid_file(tmp_path: Path) -> Path:
    path = tmp_path / "wf.yaml"
    path.write_text(BASE)
    return path


def test_valid_document_exits_zero(valid_file: Path) -> None:
    result = _xflow("validate", valid_file)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr.strip() == "1 file(s) valid: 0 error(s), 0 warning(s)"


def test_warnings_are_printed_but_do_not_fail(tmp_path: Path) -> None:
    path = tmp_path / "wf.yaml"
    path.write_text(BASE + "  - name: Lonely\n    type: sleep\n    duration: PT1S\n    end: true\n")
    result = _xflow("validate", path)
    assert result.returncode == 0
    assert result.stdout == (f"{path}:54:5 /states/3: warning: state 'Lonely' is unreachable: no transition from "
                             "the start state leads to it [XF119 unreachable-state]\n")


def test_malformed_corpus_through_the_cli_exits_one_without_traceback() -> None:
    files = sorted(p for p in MALFORMED.iterdir() if p.name != "EXPECT")
    result = _xflow("validate", *files)
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    reported = {line.split(":", 1)[0] for line in result.stdout.splitlines()}
    assert {str(p) for p in files} <= reported  # every file got at least one diagnostic


@pytest.mark.parametrize("name", ["garbage.yaml", "tab_indent.yaml", "unknown_state_type.yaml", "json_nan.json"])
def test_single_malformed_files(name: str) -> None:
    result = _xflow("validate", MALFORMED / name)
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stdout.startswith(str(MALFORMED / name))


def test_missing_file_is_a_diagnostic_not_a_crash(tmp_path: Path) -> None:
    result = _xflow("validate", tmp_path / "nope.yaml")
    assert result.returncode == 1
    assert "cannot read file: No such file or directory [XF007 unreadable-file]" in result.stdout
    assert "Traceback" not in result.stderr


def test_json_format(valid_file: Path) -> None:
    bad = MALFORMED / "unknown_transition.yaml"
    result = _xflow("validate", "--format", "json", valid_file, bad)
    assert result.returncode == 1
    payload = json.loads(result.stdout)
    assert payload["valid"] is False and payload["errors"] == 1 and payload["warnings"] == 0
    assert payload["diagnostics"] == [{
        "file": str(bad), "line": 8, "column": 17, "pointer": "/states/0/transition",
        "message": "transition target 'b' is not a state of this workflow", "severity": "error",
        "code": "XF101", "slug": "unknown-transition-target"}]


def test_usage_error_without_files() -> None:
    result = _xflow("validate")
    assert result.returncode == 2
    assert "the following arguments are required: FILE" in result.stderr


def test_validate_does_not_import_heavy_dependencies(valid_file: Path) -> None:
    probe = (
        "import sys\n"
        "from xflow_runtime.cli.main import main\n"
        f"code = main(['validate', {str(valid_file)!r}])\n"
        # jsonschema/referencing: a valid document is judged by jsonschema-rs alone (schema_check)
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'litellm', 'dbos', 'sqlalchemy', 'tiktoken',"
        " 'httpx', 'jinja2', 'jsonschema', 'referencing'})\n"
        "print(code, heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.stdout.strip() == "0 []", result.stdout + result.stderr


def test_stdin_document() -> None:
    result = subprocess.run([sys.executable, str(XFLOW), "validate", "-"], input=BASE.replace(
        "transition: Decide", "transition: Nowhere"), capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.returncode == 1
    assert result.stdout == ("<stdin>:38:17 /states/0/transition: transition target 'Nowhere' is not a state of this "
                             "workflow [XF101 unknown-transition-target]\n")
