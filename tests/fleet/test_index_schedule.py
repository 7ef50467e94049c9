"""Scope indexes built by the fleet on a schedule (``--index-scopes-every``; specs/deployment.md,
"Scope indexes on a schedule"): real worker processes on a real PostgreSQL, a period of seconds and
lowered thresholds. Nobody runs ``xflow memory index-scopes``."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.fleet.support import start_worker, start_workers
from xflow_runtime.engine.index_schedule import QUEUE, SCHEDULE, TICK_NAME
from xflow_runtime.memory.longterm import MemoryScope, repository, scope_index
from xflow_runtime.memory.longterm.embedder import normalise
from xflow_runtime.storage.database import open_database, write_transaction
from xflow_runtime.testing.wire import hashed_embedding

pytestmark = pytest.mark.postgres

MODEL = "scripted-embedding"
SCHEDULED = ("--index-scopes-every", "2s", "--index-scopes-threshold", "40", "--index-scopes-keyword-threshold", "40")


def _store(url: str, user: str, size: int, dim: int = 64) -> None:
    """``size`` facts of ``user`` (tenant acme, agent support), with vectors."""
    engine = open_database(url)  # migrated, as a worker would
    try:
        rows = [repository.new_row(MemoryScope("acme", "support", user), "fact", f"{user} note {i}",
                                   category="general", importance=5,
                                   embedding=normalise(hashed_embedding(f"{user} note {i}", dim)),
                                   embedding_model=MODEL, embedding_dim=dim) for i in range(size)]
        with write_transaction(engine) as connection:
            connection.execute(repository.memories.insert(), rows)
    finally:
        engine.dispose()


def _names(user: str) -> set[str]:
    return {scope_index.index_name("acme", "support", user, MODEL, 64),
            scope_index.keyword_index_name("acme", "support", user)}


def _query(url: str, statement: str) -> list[Any]:
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as connection:
        return connection.execute(statement).fetchall()


def _scope_indexes(url: str) -> dict[str, bool]:
    return dict(_query(url, "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                            f"WHERE c.relname LIKE '{scope_index.PREFIX}%'"))


def _ticks(url: str) -> list[tuple[str, str, str | None, str]]:
    """(status, queue, what its maintenance step returned, executor) of every index-scopes tick."""
    return _query(url, "SELECT w.status, w.queue_name, o.output, w.executor_id FROM dbos.workflow_status w "
                       "LEFT JOIN dbos.operation_outputs o ON o.workflow_uuid = w.workflow_uuid "
                       "AND o.function_name = 'xflow.index_scopes.maintain' "
                       f"WHERE w.name = '{TICK_NAME}' ORDER BY w.created_at")


def _wait(condition: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.2)


def test_two_workers_build_a_large_scopes_indexes_once_and_zero_turns_the_schedule_off(
        postgres_database_url: str) -> None:
    url = postgres_database_url
    _store(url, "big", 120)
    _store(url, "small", 10)
    workers = start_workers(2, url, *SCHEDULED)
    try:
        _wait(lambda: _scope_indexes(url) == dict.fromkeys(_names("big"), True))
        done = len([t for t in _ticks(url) if t[0] == "SUCCESS"])
        _wait(lambda: len([t for t in _ticks(url) if t[0] == "SUCCESS"]) >= done + 2)  # later ticks: nothing to do
    finally:
        for worker in workers:
            assert worker.terminate() == 0
    ticks = [t for t in _ticks(url) if t[0] != "PENDING"]  # (a tick cut by the stop stays PENDING)
    assert {t[0] for t in ticks} == {"SUCCESS"} and {t[1] for t in ticks} == {QUEUE}  # never the instance queue
    built = [name for t in ticks for name in _built(t[2])]
    assert sorted(built) == sorted(_names("big")), ticks  # each index built once, by one tick of one worker
    assert _scope_indexes(url) == dict.fromkeys(_names("big"), True)

    # 0: the schedule is deleted fleet-wide; a scope grown above the threshold gets no index
    _store(url, "grown", 120)
    off = start_worker(url, *SCHEDULED[2:], "--index-scopes-every", "0")
    try:
        assert not _query(url, f"SELECT 1 FROM dbos.workflow_schedules WHERE schedule_name = '{SCHEDULE}'")
        time.sleep(5)  # two periods of the old schedule
        assert _scope_indexes(url) == dict.fromkeys(_names("big"), True)
    finally:
        assert off.terminate() == 0


def test_a_build_cut_short_by_a_killed_worker_is_built_again_by_the_fleet(postgres_database_url: str) -> None:
    import psycopg

    url = postgres_database_url
    _store(url, "big", 120)
    # an open writer of the table: CREATE INDEX CONCURRENTLY records its (invalid) index, then waits for it
    writer = psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"))
    writer.execute("UPDATE xflow_memories SET importance = 6 WHERE id = (SELECT min(id) FROM xflow_memories)")
    worker = start_worker(url, *SCHEDULED)
    try:
        _wait(lambda: False in _scope_indexes(url).values())
        worker.kill()  # mid-build; the server then cuts its session's build short
        _query(url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE query LIKE 'CREATE INDEX CONCURRENTLY%' AND pid <> pg_backend_pid()")
        writer.rollback()
        left = _scope_indexes(url)
        assert False in left.values() and set(left) <= _names("big")  # what a cut build leaves
    finally:
        writer.close()
        worker.kill()
    again = start_worker(url, *SCHEDULED)

    def rebuilt() -> bool:  # a tick recorded as done that dropped the invalid index, then built
        return any(set(_step(t[2])["dropped"]) & set(left) for t in _ticks(url) if t[0] == "SUCCESS" and _built(t[2]))

    try:  # (the indexes turn valid before the tick that built them is recorded: wait for the record)
        _wait(lambda: _scope_indexes(url) == dict.fromkeys(_names("big"), True) and rebuilt())
    finally:
        assert again.terminate() == 0
    assert rebuilt()


def _step(output: str | None) -> dict[str, Any]:
    """What a tick's maintenance step returned (``Maintenance.as_dict``), ``{}`` for a skipped tick."""
    value = json.loads(output) if output else {}
    return value if isinstance(value, dict) else {}


def _built(output: str | None) -> list[str]:
    return list(_step(output).get("built", []))


@pytest.mark.parametrize("workers", [0, 1])
def test_serve_builds_them_in_the_process_that_runs_instances(postgres_database_url: str, tmp_path: Any,
                                                              workers: int) -> None:
    """``xflow serve`` without workers runs them itself (executor ``local``); with ``--workers``
    its workers do (the options passed on), not the front end."""
    import os
    import signal
    import subprocess
    import sys

    from tests.fleet.support import REPO
    from tests.service.support import free_port

    url = postgres_database_url
    _store(url, "big", 120)
    (tmp_path / "wf").mkdir()
    log = open(tmp_path / "serve.log", "ab")
    service = subprocess.Popen(
        [sys.executable, "-m", "xflow_runtime.cli.main", "serve", "--workflows", str(tmp_path / "wf"), "--db", url,
         "--port", str(free_port()), "--auth", "none", "--workers", str(workers), "--drain-seconds", "2",
         "--log-level", "warning", *SCHEDULED],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=log, stderr=subprocess.STDOUT)
    try:
        def built() -> bool:
            assert service.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
            return _scope_indexes(url) == dict.fromkeys(_names("big"), True)

        _wait(built, 120)
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=60)
        log.close()
    builders = {t[3] for t in _ticks(url) if _built(t[2])}
    assert len(builders) == 1 and (builders == {"local"} if not workers else next(iter(builders)).startswith("xw-"))


def test_a_failing_build_is_logged_once_a_tick_without_user_text_and_fails_no_tick(
        postgres_database_url: str, tmp_path: Any) -> None:
    url = postgres_database_url
    user = "zqx7-ann@example.com"
    _store(url, user, 45, dim=4100)  # above the HNSW limit of 4,000 dimensions: every build fails
    with open(tmp_path / "worker.log", "w") as log:
        worker = start_worker(url, *SCHEDULED, stderr=log)
        try:
            _wait(lambda: len([t for t in _ticks(url) if _step(t[2]).get("failed")]) >= 2)
        finally:
            assert worker.terminate() == 0
    failed = [t for t in _ticks(url) if _step(t[2]).get("failed")]
    assert {t[0] for t in failed} == {"SUCCESS"}  # a failed build is not a failed workflow
    lines = [line for line in (tmp_path / "worker.log").read_text().splitlines() if "scope index" in line]
    assert len(failed) <= len(lines) <= len(failed) + 1  # once per tick (one more may end after the count)
    assert all("tried again at the next run" in line and "4000" in line for line in lines), lines
    assert "zqx7" not in (tmp_path / "worker.log").read_text() and "zqx7" not in str(failed)
