"""The ``xflow`` command: a thin dispatcher.

Each sub-command lives in its own module (``xflow_runtime.cli.<name>``) exposing
``register(subparsers)`` and is imported only when named, so ``xflow validate`` never pays for
what ``xflow run`` or ``xflow chat`` need (litellm, DBOS, SQLAlchemy).

Exit codes: 0 success, 1 the command failed (invalid document for ``validate``; a failed
instance for ``run``), 2 a usage error or an invalid definition given to ``run``.
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
    "chat": ("xflow_runtime.cli.chat", "talk to an agent workflow in the terminal"),
    "memory": ("xflow_runtime.cli.memory", "manage chat histories and long-term memories"),
    "serve": ("xflow_runtime.cli.serve", "serve workflows over HTTP (instances, events, chat, streams)"),
    "keys": ("xflow_runtime.cli.keys", "create, list and revoke API keys of xflow serve"),
    "tasks": ("xflow_runtime.cli.tasks", "list, claim, complete or delete user tasks on xflow serve"),
}


def build_parser(command: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="xflow", description="Run and check xFlow workflows.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        if name == command:
            module = importlib.import_module(module_name)
            module.register(subparsers, name)
        else:
            subparsers.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in args_list if not a.startswith("-")), None)
    if command not in COMMANDS:
        parser = build_parser(None)
        if command is None and not args_list:
            parser.print_help()
            return 2
        parser.parse_args(args_list)  # prints help / usage errors and exits
        return 2
    parser = build_parser(command)
    args = parser.parse_args(args_list)
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
