"""``xflow validate FILE…``: check workflow documents and report every problem.

Exit 0 when every document is valid (warnings are printed but allowed), 1 when any has errors.
``-`` reads a document from stdin. ``--json`` (alias ``--format json``) prints ``{"valid": bool, "files": [...], "diagnostics": [...]}`` on stdout.
Imports only the definition package: no litellm, DBOS or SQLAlchemy.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(subparsers: Any, name: str) -> None:
    parser = subparsers.add_parser(name, help="check workflow documents and report every problem",
                                   description="Check workflow documents (YAML or JSON): syntax, schema, "
                                               "references and lint rules. Exit 1 if any has errors.")
    parser.add_argument("files", nargs="+", metavar="FILE", help="workflow documents to check ('-' reads stdin)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default text)")
    parser.add_argument("--json", dest="format", action="store_const", const="json", help="same as --format json")
    parser.add_argument("--no-warnings", action="store_true", help="print errors only")
    parser.add_argument("--strict", action="store_true",
                        help="the letter of SW 0.8: SonataFlow relaxations (XF140-XF147) are errors, not warnings")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from xflow_runtime.definition import validate_documents, validate_text

    diagnostics = []
    for file in args.files:
        if file == "-":
            diagnostics.extend(validate_text(sys.stdin.read(), "<stdin>", strict=args.strict))
        else:
            diagnostics.extend(validate_documents([file], strict=args.strict))
    if args.no_warnings:
        diagnostics = [d for d in diagnostics if d.severity == "error"]
    errors = sum(1 for d in diagnostics if d.severity == "error")
    warnings = len(diagnostics) - errors
    if args.format == "json":
        payload = {"valid": errors == 0, "files": list(args.files), "errors": errors, "warnings": warnings,
                   "diagnostics": [d.to_dict() for d in diagnostics]}
        _write(json.dumps(payload, indent=2) + "\n")
    else:
        _write("".join(f"{diagnostic}\n" for diagnostic in diagnostics))
        verdict = "invalid" if errors else "valid"
        print(f"{len(args.files)} file(s) {verdict}: {errors} error(s), {warnings} warning(s)", file=sys.stderr)
    return 1 if errors else 0


def _write(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `xflow validate … | head` is fine
        sys.stderr.close()
