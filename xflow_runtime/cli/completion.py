"""``xflow completion SHELL``: print a completion script for bash, zsh or tcsh (by shtab).

shtab is imported here only, so no other command's start-up pays for it. The script completes
every command, sub-command and option; regenerate it after upgrading xflow-runtime.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

SHELLS = ("bash", "zsh", "tcsh")


def register(subparsers: Any, name: str) -> None:
    parser = subparsers.add_parser(name, help="print a shell completion script (bash, zsh, tcsh)",
                                   description=__doc__.split("\n\n")[0])
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    parser.set_defaults(handler=completion_command)


def completion_command(args: argparse.Namespace) -> int:
    try:
        import shtab
    except ImportError:
        print("xflow completion: the shtab package is missing (python3 -m pip install shtab)", file=sys.stderr)
        return 1
    from xflow_runtime.cli.main import ALL, build_parser
    from xflow_runtime.cli.output import write_out

    write_out(shtab.complete(build_parser(ALL), shell=args.shell))
    return 0
