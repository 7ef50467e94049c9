"""``xflow memory reindex``: re-embed a tenant's memories, facts and chat messages under the
current embedding model and query/document modes (one command after changing either).
``xflow memory index-scopes``: build the own HNSW index of every scope above the threshold, and
the own keyword index of every user above the keyword threshold (PostgreSQL; ``CREATE INDEX
CONCURRENTLY``, off the request path; ``scope_index.maintain``).

    xflow memory index-scopes [--threshold N] [--keyword-threshold N] [--dry-run] [--maintenance-work-mem 1GB] [--json] [--db URL]

    xflow memory reindex --embedding-model MODEL [--embedding-mode e5|bge|input-type|cohere|voyage|none]
                         [--api-base URL] [--force] [--json] [--db URL] [--tenant T]

Only rows embedded under another model or mode (or not at all) are embedded again; ``--force``
re-embeds everything (after a change of the contextual format). Provider keys come from the
environment as for every litellm call. Exit 0 when done, 1 when an embedding call failed (run it
again: finished batches are kept) or a scope index could not be built (the others are built; the
reason is logged), 2 on a usage error.
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

    scopes = commands.add_parser("index-scopes", parents=[common],
                                 help="build the own HNSW index of every large scope (PostgreSQL; workers also "
                                      "run it every 10 minutes: xflow worker --index-scopes-every)")
    add_threshold_options(scopes)
    scopes.add_argument("--dry-run", action="store_true", help="say what would be built or dropped")
    scopes.add_argument("--maintenance-work-mem", default=None, metavar="SIZE",
                        help="PostgreSQL maintenance_work_mem for the builds (e.g. 1GB: faster)")
    scopes.add_argument("--json", action="store_true", help="print the report as JSON")
    scopes.set_defaults(handler=_index_scopes)


def add_threshold_options(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    """``--{prefix}threshold`` and ``--{prefix}keyword-threshold``: when a scope gets its own
    indexes (here; ``index-scopes-`` on the commands that run it on a schedule)."""
    parser.add_argument(f"--{prefix}threshold", type=int, default=None, metavar="N",
                        help="vectors in a scope above which it gets its own index (default: "
                             "LongTermOptions.scope_index_threshold)")
    parser.add_argument(f"--{prefix}keyword-threshold", type=int, default=None, metavar="N",
                        help="rows of a user above which it also gets its own keyword index (default: "
                             "LongTermOptions.keyword_index_threshold)")


def _index_scopes(args: argparse.Namespace) -> int:
    from xflow_runtime.cli.memory import open_memory_engine
    from xflow_runtime.errors import XFlowError
    from xflow_runtime.memory.longterm import LongTermOptions, scope_index

    async def run() -> int:  # (run_async: a user-facing error is one line and exit 1)
        defaults = LongTermOptions()
        threshold = defaults.scope_index_threshold if args.threshold is None else args.threshold
        words = defaults.keyword_index_threshold if args.keyword_threshold is None else args.keyword_threshold
        if threshold < 1 or words < 1:
            raise XFlowError("--threshold and --keyword-threshold must be ≥ 1")
        engine = open_memory_engine(args.db)
        try:  # SQLite: nothing to do (every scope is searched exactly), reported as such
            dialect = engine.dialect.name
            done = scope_index.maintain(engine, threshold, keyword_threshold=words, dry_run=args.dry_run,
                                        maintenance_work_mem=args.maintenance_work_mem)
        finally:
            engine.dispose()
        if args.json:
            print(json.dumps({"threshold": threshold, "keyword_threshold": words, "dry_run": args.dry_run,
                              "database": dialect, **done.as_dict()}, sort_keys=True))
        else:
            verb = "would build" if args.dry_run else "built"
            failed = f", failed {len(done.failed)} (the server's reason is logged)" if done.failed else ""
            print(f"scope indexes (graphs above {threshold} vectors, keyword indexes above {words} rows): "
                  f"{verb} {len(done.planned or done.built)}, dropped {len(done.dropped)}, kept {len(done.kept)}{failed}")
        return 1 if done.failed else 0
    return run_async(run)


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
