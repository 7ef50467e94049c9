"""``xflow schema``: print the JSON Schemas of the dialect, or write them all to a folder.

    xflow schema                  # the root schema (workflow.json) on stdout
    xflow schema --name agents    # one schema by file name
    xflow schema --list           # the schema names and their $ids
    xflow schema --write DIR      # every schema file into DIR (for editors, CI, docs)
    xflow schema --bundle         # the root schema as one self-contained file (no cross-file $refs)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from xflow_runtime.definition import schema_registry


def register(subparsers: Any, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="print or write the JSON Schemas of the dialect",
        description="Print the root JSON Schema of xFlow workflows (or one by --name), list them, "
        "or write all of them to a folder with --write.",
    )
    parser.add_argument("--name", default=schema_registry.ROOT_SCHEMA,
                        help="schema to print, by file name without .json (default: %(default)s)")
    parser.add_argument("--list", action="store_true", help="list the schema names and their $ids")
    parser.add_argument("--write", metavar="DIR", type=Path,
                        help="write every schema file into DIR (created if missing); with --bundle, "
                        "write workflow.bundle.json there too")
    parser.add_argument("--bundle", action="store_true",
                        help="print the root schema as one self-contained file (for editors that "
                        "cannot follow references between files)")
    parser.add_argument("--json", action="store_true",
                        help="JSON for --list ([{name, id}]) and --write ({folder, files}); schemas are JSON anyway")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        files = schema_registry.schema_files()
        if args.bundle:
            bundle = schema_registry.bundled_schema()
            if args.write is None:
                print(json.dumps(bundle, indent=2, ensure_ascii=False))
                return 0
            files = {**files, "workflow.bundle": bundle}
        if args.write is not None:
            return _write_all(files, args.write, as_json=args.json)
        if args.list:
            if args.json:
                print(json.dumps([{"name": name, "id": document.get("$id")} for name, document in files.items()]))
                return 0
            for name, document in files.items():
                print(f"{name}\t{document.get('$id', '')}")
            return 0
        if args.name not in files:
            print(f"xflow schema: no schema named {args.name!r}; known: {', '.join(files)}", file=sys.stderr)
            return 2
        print(json.dumps(files[args.name], indent=2, ensure_ascii=False))
        return 0
    except schema_registry.SchemaNotFound as error:
        print(f"xflow schema: {error}", file=sys.stderr)
        return 1


def _write_all(files: dict[str, dict[str, Any]], folder: Path, *, as_json: bool = False) -> int:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, document in files.items():
            text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
            (folder / f"{name}.json").write_text(text, encoding="utf-8")
    except OSError as error:
        print(f"xflow schema: cannot write to {folder}: {error.strerror or error}", file=sys.stderr)
        return 1
    print(f"wrote {len(files)} schema files to {folder}", file=sys.stderr)
    if as_json:
        print(json.dumps({"folder": str(folder), "files": [f"{name}.json" for name in files]}))
    return 0
