"""A start over HTTP that races an erasure of its user (specs/memory-longterm.md, "Nothing in
flight writes the user back"), on a real ``xflow serve`` over PostgreSQL: the start has read the
user's erasure epoch and waits to store the instance (a lock on DBOS's status table; its insert
is seen waiting in ``pg_stat_activity``) while the erasure runs and finds nothing. The answer is a
403 problem and nothing of the instance is kept."""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.privacy.scan import traces
from tests.service.support import WORKFLOWS, ServiceProcess, assert_problem, bearer, jwt_token
from tests.support.postgres import insert_waits_for_a_lock
from xflow_runtime import erase_user
from xflow_runtime.settings import locate
from xflow_runtime.storage.database import open_database

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
TENANT, USER, PHRASE = "acme", "u-racing-1", "ibexvermilion"


def test_a_start_that_races_the_erasure_of_its_user_answers_403_and_keeps_nothing(
        postgres_database_url: str, tmp_path: Path) -> None:
    url = postgres_database_url
    workflows = tmp_path / "workflows"
    workflows.mkdir()
    shutil.copy(WORKFLOWS / "greet.yaml", workflows / "greet.yaml")
    sql = create_engine(url)
    open_database(locate(url).memory_url).dispose()  # a memory store: the user's epoch is kept there
    service = ServiceProcess(workflows, url, auth="jwt", log_dir=tmp_path).start()
    answers: list[httpx.Response] = []
    try:
        with httpx.Client(base_url=service.url, timeout=120, headers=bearer(jwt_token(TENANT, USER))) as client:
            other = client.post("/v1/workflows/greet/instances", json={"name": "first"},
                                headers=bearer(jwt_token(TENANT, "u-other-2")))
            assert other.status_code == 201, other.text
            with sql.connect() as holder, holder.begin():  # inserts wait, reads do not
                holder.execute(text("LOCK TABLE dbos.workflow_status IN EXCLUSIVE MODE"))
                poster = threading.Thread(target=lambda: answers.append(
                    client.post("/v1/workflows/greet/instances", json={"name": PHRASE})))
                poster.start()
                deadline = time.monotonic() + 120
                while not insert_waits_for_a_lock(sql, "dbos.workflow_status"):
                    assert time.monotonic() < deadline and poster.is_alive(), ("the start never waited", answers)
                    time.sleep(0.05)
                receipt = asyncio.run(erase_user(USER, tenant=TENANT, database_url=url))
            poster.join(120)
        assert receipt.erasure_epoch == 1 and receipt.store("durable").total == 0  # it found nothing
        assert_problem(answers[0], 403)
        assert traces(url, [PHRASE, USER]) == {}
    finally:
        service.stop()
        sql.dispose()
