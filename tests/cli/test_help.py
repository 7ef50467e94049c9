"""Every command's ``--help`` ends with examples; the README's CLI section agrees with the help;
``--version``, ``-v``/``--log-level``; colour only on a terminal and never with ``NO_COLOR``;
shell completion; what ``xflow run --ephemeral`` does not import at start-up."""

from __future__ import annotations

import argparse
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from xflow_runtime.cli import output
from xflow_runtime.cli.main import ALL, COMMANDS, build_parser

REPO = Path(__file__).resolve().parents[2]


def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


PARSERS = dict(_parsers(build_parser(ALL)))


@pytest.mark.parametrize("path", [p for p in PARSERS if p], ids=" ".join)
def test_every_command_help_ends_with_examples(path) -> None:
    text = PARSERS[path].format_help()
    assert "examples:\n  xflow " + path[0] in text
    assert "--log-level" in text and "-v, --verbose" in text


def _readme_cli_lines() -> list[str]:
    readme = (REPO / "README.md").read_text()
    section = readme.split("## The `xflow` command", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    lines: list[str] = []
    for line in block.strip("\n").splitlines():
        if line.startswith("xflow "):
            lines.append(line)
        else:  # a continuation line of the command above
            lines[-1] += " " + line.strip()
    return lines


def test_the_readme_cli_section_matches_the_commands_help() -> None:
    lines = _readme_cli_lines()
    named = {line.split()[1] for line in lines if not line.split()[1].startswith("-")}
    assert named == set(COMMANDS), "the README names exactly the commands xflow has"
    for line in lines:
        words = line.split()
        command = words[1]
        usage = PARSERS[()].format_help() if command.startswith("-") else PARSERS[(command,)].format_help()
        if len(words) > 2 and (command, words[2].split("|")[0]) in PARSERS:
            # a command with sub-commands (memory, keys): its options belong to those listed after it
            subcommands = words[2].split("|")
            assert set(subcommands) <= {p[1] for p in PARSERS if len(p) > 1 and p[0] == command}
            usage = "".join(PARSERS[(command, sub)].format_help() for sub in subcommands)
        for option in re.findall(r"(?<![\w-])(--?[a-z][a-z0-9-]*)", line):  # --a2a has a digit
            assert re.search(rf"(?<![\w-]){re.escape(option)}\b", usage), f"README: {command} {option} not in --help"
        if command == "completion":
            assert set(words[2].split("|")) == {"bash", "zsh", "tcsh"}


@pytest.fixture
def logging_restored():
    import logging

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_version_and_log_levels(cli, workdir, logging_restored) -> None:
    from xflow_runtime import __version__

    result = cli("--version")
    assert (result.code, result.out) == (0, f"xflow {__version__}\n")
    logged = cli("--log-level", "debug", "validate", "greet.yaml")
    assert logged.code == 0
    assert cli("validate", "greet.yaml", "-vv").code == 0
    with pytest.raises(SystemExit) as refused:  # argparse's usage error
        cli("validate", "greet.yaml", "--log-level", "loud")
    assert refused.value.code == 2


def test_log_lines_carry_iso_times_with_their_zone(workdir) -> None:
    probe = ("import logging, sys\nfrom xflow_runtime.cli.main import main\n"
             "main(['-v', 'validate', 'greet.yaml'])\nlogging.getLogger('probe').info('hello')\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=workdir, capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert re.search(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00 INFO probe: hello$", done.stderr, re.M), done.stderr


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert output.paint("x", "red", Terminal()) == "\033[31mx\033[0m"
    assert output.paint("x", "red", io.StringIO()) == "x"
    monkeypatch.setenv("NO_COLOR", "1")
    assert output.paint("x", "red", Terminal()) == "x"
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "dumb")
    assert output.paint("x", "red", Terminal()) == "x"


def test_timestamps_are_iso_8601_in_utc_with_the_zone() -> None:
    from datetime import datetime, timedelta, timezone

    assert output.timestamp(0) == "1970-01-01T00:00:00.000+00:00"
    paris = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=1)))
    assert output.timestamp(paris) == "2026-01-02T02:04:05.000+00:00"
    assert output.with_timestamps({"created_at": 0, "states": [{"entered_at": 1.5, "duration": 2}]}) == {
        "created_at": "1970-01-01T00:00:00.000+00:00",
        "states": [{"entered_at": "1970-01-01T00:00:01.500+00:00", "duration": 2}]}


@pytest.mark.parametrize("shell", ["bash", "zsh", "tcsh"])
def test_completion_scripts_name_every_command(cli, shell) -> None:
    result = cli("completion", shell)
    assert result.code == 0, result.err
    for command in COMMANDS:
        assert command in result.out


def test_start_up_of_run_and_validate_imports_no_completion_readline_or_dotenv(workdir) -> None:
    probe = ("import sys\nfrom xflow_runtime.cli.main import main\n"
             "assert main(['run', 'greet.yaml', '--ephemeral']) == 0\nassert main(['validate', 'greet.yaml']) == 0\n"
             "print(sorted(m for m in ('shtab', 'readline', 'dotenv', 'referencing') if m in sys.modules), "
             "file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=workdir, capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr
