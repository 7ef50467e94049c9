"""The ``xflow`` command: a thin dispatcher.

Each sub-command lives in its own module (``xflow_runtime.cli.<name>``) exposing
``register(subparsers, name)`` and is imported only when named, so ``xflow validate`` never pays
for what ``xflow run`` or ``xflow chat`` need (litellm, DBOS, SQLAlchemy), and ``xflow run`` never
for shtab, readline or python-dotenv. ``build_parser(ALL)`` registers every command (shell
completion, the help tests).

Global options: ``--version``; ``-v`` (INFO; ``-vv`` DEBUG) or ``--log-level LEVEL`` for log lines
on stderr, before or after the command. Exit codes: the table in specs/cli.md
(``cli/output.py`` names them).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

#: command name → (module, one-line help). Add a command by adding a module and a line here.
COMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("xflow_runtime.cli.validate", "check workflow documents and report every problem"),
    "schema": ("xflow_runtime.cli.schema", "print or write the JSON Schemas of the dialect"),
    "run": ("xflow_runtime.cli.run", "run a workflow and print its output as JSON"),
    "resume": ("xflow_runtime.cli.instances", "resume a durable instance"),
    "list": ("xflow_runtime.cli.instances", "list workflow instances"),
    "show": ("xflow_runtime.cli.instances", "show one instance: states, inputs, outputs, errors, usage"),
    "send": ("xflow_runtime.cli.send", "deliver events or a message to a waiting instance"),
    "chat": ("xflow_runtime.cli.chat", "talk to an agent workflow in the terminal"),
    "memory": ("xflow_runtime.cli.memory", "manage chat histories and long-term memories"),
    "serve": ("xflow_runtime.cli.serve", "serve workflows over HTTP (instances, events, chat, streams)"),
    "worker": ("xflow_runtime.cli.worker", "run instances as one worker of a fleet on PostgreSQL"),
    "keys": ("xflow_runtime.cli.keys", "create, list and revoke API keys of xflow serve"),
    "completion": ("xflow_runtime.cli.completion", "print a shell completion script (bash, zsh, tcsh)"),
    "tasks": ("xflow_runtime.cli.tasks", "list, claim, complete or delete user tasks on xflow serve"),
}
#: ``build_parser(ALL)`` registers every command
ALL = "*"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def build_parser(command: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="xflow", description="Run and check xFlow workflows.",
                                     epilog="Exit codes: 0 ok, 1 failed, 2 usage or invalid definition, "
                                            "3 still waiting after --wait-timeout, 130 interrupted "
                                            "(specs/cli.md). 'xflow COMMAND --help' shows examples.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    _add_logging_options(parser, top=True)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        if command in (name, ALL):
            importlib.import_module(module_name).register(subparsers, name)
        else:
            subparsers.add_parser(name, help=help_text, add_help=False)
    if command is not None:
        from xflow_runtime.cli.help_examples import apply_examples

        apply_examples(parser)
        _add_logging_everywhere(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    command = _command_of(args_list)
    if command not in COMMANDS:
        parser = build_parser(None)
        if command is None and not args_list:
            parser.print_help()
            return 2
        args = parser.parse_args(args_list)  # prints help / usage errors and exits
        if args.version:
            print(f"xflow {_version()}")
            return 0
        parser.print_usage(sys.stderr)
        return 2
    parser = build_parser(command)
    args = parser.parse_args(args_list)
    _configure_logging(getattr(args, "log_level", None), getattr(args, "verbose", 0))
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _command_of(args: list[str]) -> str | None:
    """The first word that is not an option (nor the value of ``--log-level``)."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--log-level":
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def _add_logging_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    # Below the top level, SUPPRESS keeps a sub-command from resetting what was given before it.
    default_level, default_count = (None, 0) if top else (argparse.SUPPRESS, argparse.SUPPRESS)
    parser.add_argument("-v", "--verbose", action="count", default=default_count,
                        help="log more on stderr: -v INFO, -vv DEBUG")
    parser.add_argument("--log-level", type=str.upper, choices=LOG_LEVELS, default=default_level,
                        metavar="LEVEL", help=f"log level on stderr ({', '.join(LOG_LEVELS)})")


def _add_logging_everywhere(parser: argparse.ArgumentParser) -> None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                if sub.add_help and not any("--log-level" in a.option_strings for a in sub._actions):
                    _add_logging_options(sub, top=False)
                _add_logging_everywhere(sub)


def _configure_logging(level: str | None, verbose: int) -> None:
    if level is None and not verbose:
        return
    import logging

    from xflow_runtime.cli.output import timestamp

    class IsoFormatter(logging.Formatter):
        def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
            return timestamp(record.created) or ""

    from xflow_runtime._logging import CurrentStderrHandler

    handler = CurrentStderrHandler()
    handler.setFormatter(IsoFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level or ("INFO" if verbose == 1 else "DEBUG"))


def _version() -> str:
    from xflow_runtime import __version__

    return __version__


if __name__ == "__main__":
    sys.exit(main())
