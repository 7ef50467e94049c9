"""``GET /metrics``: the instance gauge ``xflow_instances{status}`` is the number of instances of
every tenant that show each status, counted by the database (specs/service.md, "Operations"),
through a real server on SQLite and on PostgreSQL, with more instances in the store than the
10,000 the scrape used to read.

Real instances through the API (completed, running, waiting, cancelled, of two tenants) and, to
have more than 10,000 cheaply, copies of a real status row of DBOS's ``workflow_status`` made by
SQL (the storage format ``tests/engine/durable/test_instance_index.py`` pins) with settled and
PENDING statuses: what a long-lived store holds. The expected counts are each real instance's
status as ``GET /v1/instances/{id}`` shows it, plus the copies by the statuses they were given."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.service.support import bearer, store_url

pytestmark = pytest.mark.slow
#: DBOS status of the copies → how many, and the status each shows (views.status_of).
COPIES = {"SUCCESS": (9_000, "completed"), "ERROR": (600, "failed"), "MAX_RECOVERY_ATTEMPTS_EXCEEDED": (100, "failed"),
          "CANCELLED": (400, "cancelled"), "PENDING": (300, "running")}
STATUSES = ("running", "waiting", "completed", "failed", "cancelled")


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, service_dir: Path) -> str:
    return store_url(request, service_dir, "xflow_metrics")


def _gauge(client: httpx.Client) -> dict[str, int]:
    text_format = client.get("/metrics").text
    found = {m.group(1): float(m.group(2)) for m in re.finditer(r'^xflow_instances\{status="(\w+)"\} (\S+)$',
                                                                text_format, re.M)}
    assert set(found) == set(STATUSES), text_format
    return {status: int(value) for status, value in found.items()}


def _shown(client: httpx.Client, key: str, instance_id: str) -> str:
    response = client.get(f"/v1/instances/{instance_id}", headers=bearer(key))
    assert response.status_code == 200, response.text
    return str(response.json()["status"])


def _copy_rows(db_url: str, template: str) -> None:
    """Copies of the status row of ``template`` (a completed instance) under new ids, by status."""
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    table = "dbos.workflow_status" if engine.dialect.name == "postgresql" else "workflow_status"
    with engine.begin() as connection:
        columns = list(connection.execute(text(f"SELECT * FROM {table} WHERE 1 = 0")).keys())
        copied = {"workflow_uuid": "'copy-' || :status || '-' || CAST(n.i AS TEXT)", "status": ":status",
                  "executor_id": "'elsewhere'"}  # no process of this test recovers them
        select = ", ".join(copied.get(column, f"t.{column}") for column in columns)
        for status, (count, _) in COPIES.items():
            connection.execute(text(f"INSERT INTO {table} ({', '.join(columns)}) "
                                    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :count) "
                                    f"SELECT {select} FROM n, {table} AS t WHERE t.workflow_uuid = :template"),
                               {"status": status, "count": count, "template": template})
    engine.dispose()


def test_the_instance_gauge_counts_every_instance_by_the_status_it_shows(client: httpx.Client, keys: dict[str, str],
                                                                         db_url: str) -> None:
    a, b, ann = keys["a"], keys["b"], keys["a/ann"]
    started: list[tuple[str, str]] = []  # (key, id)

    def start(key: str, workflow: str, body: dict, wait: bool = False, **params: str) -> str:
        response = client.post(f"/v1/workflows/{workflow}/instances", json=body, params=params,
                               headers={**bearer(key), **({"Prefer": "wait=60"} if wait else {})})
        assert response.status_code == 201, response.text
        started.append((key, response.json()["id"]))
        return str(response.json()["id"])

    greeted = [start(a, "greet", {"name": f"g{i}"}, wait=True) for i in range(2)] + [start(b, "greet", {"name": "h"}, wait=True)]
    for i in range(2):
        start(a if i == 0 else b, "approval", {"order": f"m-{i}"}, **{"correlation.orderid": f"m-{i}"})
    cancelled = start(b, "approval", {"order": "m-c"}, **{"correlation.orderid": "m-c"})
    assert client.post(f"/v1/instances/{cancelled}/cancel", headers=bearer(b)).status_code in (200, 202)
    chats = [start(ann, "chat", {"message": f"hello {i}"}, wait=True) for i in range(2)]
    _copy_rows(db_url, greeted[0])

    def expected() -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for _, (count, status) in COPIES.items():
            counts[status] += count
        for key, instance_id in started:
            counts[_shown(client, key, instance_id)] += 1
        return counts

    truth = expected()
    assert sum(truth.values()) > 10_000 and all(truth[status] > 0 for status in STATUSES), truth
    assert truth["waiting"] == 2 and truth["cancelled"] == COPIES["CANCELLED"][0] + 1, truth
    assert _gauge(client) == truth
    # an agent's last reply ends its conversation: waiting → completed, seen by the next scrape
    done = client.post(f"/v1/instances/{chats[0]}/messages", json={"text": "bye"}, headers=bearer(ann))
    assert done.status_code == 200 and done.json()["status"] == "completed", done.text
    after = _gauge(client)
    assert after == expected() and after["waiting"] == 1 and after["completed"] == truth["completed"] + 1, after
