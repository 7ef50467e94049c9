"""Serve a reply script from the command line (for other processes, benchmarks, manual tests)::

    python -m xflow_runtime.testing --script replies.yaml [--latency 0.05] [--port 0]

Prints ``listening on http://127.0.0.1:PORT`` and serves until stdin closes or Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys

from xflow_runtime.testing.script import ScriptError, load_script
from xflow_runtime.testing.server import ScriptedModelServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xflow_runtime.testing", description=__doc__.split("\n\n")[0])
    parser.add_argument("--script", help="reply script (YAML); none: every chat call fails with 400")
    parser.add_argument("--latency", type=float, default=None, help="seconds added to every call")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args(argv)
    try:
        script = load_script(args.script) if args.script else None
    except ScriptError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    with ScriptedModelServer(script, latency=args.latency, port=args.port) as server:
        print(f"listening on {server.base_url}", flush=True)
        try:
            sys.stdin.read()  # until stdin closes
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
