"""The instance index (engine/durable/instance_index.py): the indexes exist on DBOS's
``workflow_status`` and the page and recipient queries use them (SQLite and PostgreSQL; this pins
DBOS's table and column names the queries read), instances recorded without the attributes are
labelled at launch, and the keys of correlation never miss an instance an event correlates with."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import create_engine, event, text

from xflow_runtime.engine.durable.instance_index import INDEXES, UNLABELLED_INDEX, InstanceIndex
from xflow_runtime.engine.durable.instance_keys import (
    InstanceQuery, correlates, correlation_key, event_keys, first_millisecond,
)
from xflow_runtime.runtime import Runtime

APPROVAL = Path(__file__).resolve().parents[2] / "service" / "workflows" / "approval.yaml"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store' / 'xflow.sqlite'}"
    else:
        yield request.getfixturevalue("postgres_database_url")


def _approval_event(order: str | None) -> dict[str, Any]:
    event = {"specversion": "1.0", "id": f"e-{order}", "source": "/approvals", "type": "order.approval",
             "data": {"ok": True}}
    return event if order is None else {**event, "orderid": order}


@pytest.mark.slow
async def test_the_queries_run_on_our_indexes(store_url: str) -> None:
    async with Runtime("durable", database_url=store_url) as runtime:
        plan = runtime.load(APPROVAL)
        for i in range(3):
            await runtime.start(plan, {}, tenant="t", user="u", labels={"correlation.orderid": f"o-{i}"})
    engine = create_engine(store_url.replace("postgresql://", "postgresql+psycopg://", 1))
    postgres = engine.dialect.name == "postgresql"
    statements: list[tuple[str, Any]] = []
    event.listen(engine, "before_cursor_execute",
                 lambda _c, _k, statement, parameters, *_: statements.append((statement, parameters)))
    index = InstanceIndex(engine)
    queries = {"xflow_instances_by_tenant": InstanceQuery(tenant="t", limit=2, after=(1.0e12, "z")),
               "xflow_instances_by_subject": InstanceQuery(tenant="t", limit=2, user="u"),
               "xflow_instances_by_workflow": InstanceQuery(tenant="t", limit=2, workflow="approval"),
               "xflow_instances_by_status": InstanceQuery(tenant="t", limit=2, statuses=("CANCELLED",))}
    plans = {}
    with engine.connect() as connection:
        if postgres:  # three rows: without this a sequential scan is cheaper, whatever the indexes
            connection.execute(text("SET enable_seqscan = off"))
        for name, query in [*queries.items(), ("xflow_instances_by_correlation", None), (UNLABELLED_INDEX, None)]:
            statements.clear()
            if name == UNLABELLED_INDEX:
                assert index.unlabelled(10) == []
            else:
                found = index.page(query) if query is not None else index.recipients("t", None, event_keys(_approval_event("o-1")))
                assert (len(found) == 1) if query is None else (len(found) == (0 if query.statuses else 2))
            statement, parameters = statements[0]
            explained = connection.exec_driver_sql(("EXPLAIN " if postgres else "EXPLAIN QUERY PLAN ") + statement,
                                                   parameters).all()
            plans[name] = " ".join(str(row[-1]) for row in explained)
    engine.dispose()
    for name, plan_text in plans.items():
        assert name in plan_text, (name, plan_text)
        assert "TEMP B-TREE" not in plan_text.upper() or name == "xflow_instances_by_correlation", plan_text
    assert set(plans) == {*INDEXES, UNLABELLED_INDEX}


@pytest.mark.slow
async def test_instances_recorded_without_the_attributes_are_labelled_at_launch(store_url: str) -> None:
    async with Runtime("durable", database_url=store_url) as runtime:
        plan = runtime.load(APPROVAL)
        correlated = (await runtime.start(plan, {}, tenant="t", labels={"correlation.orderid": "o-1"})).instance_id
        mine = (await runtime.start(plan, {}, tenant="t", user="u")).instance_id
        await runtime.cancel(correlated)
        await runtime.cancel(mine)
    engine = create_engine(store_url.replace("postgresql://", "postgresql+psycopg://", 1))
    table = "dbos.workflow_status" if engine.dialect.name == "postgresql" else "workflow_status"
    with engine.begin() as connection:  # as a runtime before the index recorded them
        connection.execute(text(f"UPDATE {table} SET attributes = NULL"))
    engine.dispose()
    async with Runtime("durable", database_url=store_url) as runtime:
        plan = runtime.load(APPROVAL)
        listed = await runtime.find_instances(InstanceQuery(tenant="t", limit=10))
        assert sorted(row["instance_id"] for row in listed) == sorted([correlated, mine])
        assert [r["instance_id"] for r in await runtime.find_instances(InstanceQuery(tenant="t", limit=10, user="u"))] == [mine]
        await runtime.resume(correlated)
        await runtime.resume(mine)
        assert sorted(await runtime.event_recipients(_approval_event("o-1"), tenant="t")) == sorted([correlated, mine])
        assert await runtime.event_recipients(_approval_event("o-2"), tenant="t") == [mine]
        assert await runtime.event_recipients(_approval_event("o-1"), tenant="other") == []
        # one started meanwhile by an older process of a fleet (a rolling upgrade): found all the same
        late = (await runtime.start(plan, {}, tenant="t", labels={"correlation.orderid": "o-3"})).instance_id
        engine = create_engine(store_url.replace("postgresql://", "postgresql+psycopg://", 1))
        with engine.begin() as connection:
            connection.execute(text(f"UPDATE {table} SET attributes = NULL WHERE workflow_uuid = :id"), {"id": late})
        engine.dispose()
        assert await runtime.event_recipients(_approval_event("o-3"), tenant="t") == [late, mine] or \
            sorted(await runtime.event_recipients(_approval_event("o-3"), tenant="t")) == sorted([late, mine])


@pytest.mark.slow
async def test_status_pages_of_the_unsettled_leave_out_or_keep_only_the_ids_given(store_url: str) -> None:
    """What ``status=running`` / ``status=waiting`` ask (service/listing.py): the unsettled rows but
    those the hub knows show another status, or only those it knows wait."""
    async with Runtime("durable", database_url=store_url) as runtime:
        plan = runtime.load(APPROVAL)
        ids = [(await runtime.start(plan, {}, tenant="t")).instance_id for _ in range(4)]
        await runtime.cancel(ids[3])

        async def page(**status: Any) -> list[str]:
            query = InstanceQuery(tenant="t", limit=10, statuses=(), **status)
            return sorted(row["instance_id"] for row in await runtime.find_instances(query))

        assert await page(unsettled=True) == sorted(ids[:3])
        assert await page(unsettled=True, except_ids=(ids[1], ids[3])) == sorted([ids[0], ids[2]])
        assert await page(unsettled_ids=(ids[1], ids[3])) == [ids[1]]  # a settled one never shows waiting
        assert await page(unsettled_ids=()) == []


_names = st.text("abcxyz019", min_size=1, max_size=4)
_values = st.one_of(st.text(max_size=8), st.text(min_size=290, max_size=300), st.integers(-3, 3), st.booleans())


@given(labels=st.dictionaries(_names, st.one_of(st.text(max_size=8), st.text(min_size=290, max_size=300)), max_size=3),
       event=st.dictionaries(_names, _values, max_size=5), copy=st.booleans())
def test_an_instance_an_event_correlates_with_is_always_among_the_keys_looked_up(labels, event, copy) -> None:
    instance_labels = {f"correlation.{name}": value for name, value in labels.items()}
    if copy:  # an event that carries the instance's values (the interesting case)
        event = {**event, **labels}
    if correlates(instance_labels, event):
        assert correlation_key(instance_labels) in event_keys(event)
    assert correlates(instance_labels, event) == all(n in event and str(event[n]) == v for n, v in labels.items())


@given(st.floats(min_value=0, max_value=4.0e9, allow_nan=False))
def test_the_first_millisecond_of_a_moment_is_exact(seconds: float) -> None:
    ms = first_millisecond(seconds)
    assert ms / 1000.0 >= seconds > (ms - 1) / 1000.0
