"""``xflow memory reindex``: re-embed a tenant's memories, facts and chat messages under the
current embedding model and query/document modes (one command after changing either).

    xflow memory reindex --embedding-model MODEL [--embedding-mode e5|bge|input-type|cohere|voyage|none]
                         [--api-base URL] [--force] [--json] [--db URL] [--tenant T]

Only rows embedded under another model or mode (or not at all) are embedded again; ``--force``
re-embeds everything (after a change of the contextual format). Provider keys come from the
environment as for every litellm call. Exit 0 when done, 1 when an embedding call failed (run it
again: finished batches are kept), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from xflow_runtime.cli.memory import run_async


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    reindex = commands.add_parser("reindex", parents=[common],
                                  help="re-embed memories and chat messages under the current embedding model")
    reindex.add_argument("--embedding-model", required=True, metavar="MODEL", help="litellm embedding model name")
    reindex.add_argument("--embedding-mode", default="none", metavar="MODE",
                         help="e5, bge, input-type, cohere, voyage or none (default)")
    reindex.add_argument("--api-base", default=None, metavar="URL", help="an OpenAI-compatible endpoint")
    reindex.add_argument("--force", action="store_true", help="re-embed every row, not only stale ones")
    reindex.add_argument("--json", action="store_true", help="print the report as JSON")
    reindex.set_defaults(handler=_reindex)


def _reindex(args: argparse.Namespace) -> int:
    from xflow_runtime.memory.longterm import EmbeddingModes, LongTermMemory, LongTermOptions

    async def run() -> int:
        # an endpoint without auth still needs some key for litellm's OpenAI client
        api_key = (os.environ.get("OPENAI_API_KEY") or "unused") if args.api_base else None
        options = LongTermOptions(embedding_model=args.embedding_model, api_base=args.api_base, api_key=api_key,
                                  embedding_modes=EmbeddingModes.named(args.embedding_mode))
        async with LongTermMemory.open(args.db, options) as memory:
            report = await memory.reindex(args.tenant, force=args.force)
        if args.json:
            print(json.dumps(report.to_dict(), sort_keys=True))
        else:
            print(f"re-indexed tenant {report.tenant!r} under {report.space}: "
                  f"{report.memories} memories/facts, {report.messages} chat messages")
        return 0
    return run_async(run)
