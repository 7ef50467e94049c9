"""Scope isolation as a property: random writes, facts, deletes, searches, listings, blocks and
erasures across tenants, agents and users never return another scope's rows."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.memory.longterm.conftest import options_for
from xflow_runtime.memory.longterm import LongTermMemory, MemoryScope
from xflow_runtime.testing import ScriptedModelServer

TENANTS, AGENTS, USERS = ("t1", "t2"), ("a1", "a2"), ("u1", "u2", None)
WORDS = ("apple", "river", "stone", "cloud", "tiger", "lemon")

scopes = st.tuples(st.sampled_from(TENANTS), st.sampled_from(AGENTS), st.sampled_from(USERS))
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
operations = st.lists(st.one_of(
    st.tuples(st.just("write"), scopes, st.sampled_from(("T1", "T2", "T3")), texts),
    st.tuples(st.just("fact"), scopes, texts),
    st.tuples(st.just("delete"), scopes, st.integers(0, 20)),
    st.tuples(st.just("search"), scopes, texts),
    st.tuples(st.just("list"), scopes, st.sampled_from((None, "apple", "river"))),
    st.tuples(st.just("erase"), st.sampled_from(TENANTS), st.sampled_from(("u1", "u2"))),
), min_size=4, max_size=14)


@dataclass
class Model:
    rows: dict[tuple, set[str]] = field(default_factory=dict)  # scope key → ids

    def owned(self, key: tuple) -> set[str]:
        return self.rows.setdefault(key, set())


async def check(memory: LongTermMemory, prefix: str, ops: list) -> None:
    model = Model()

    def scope_of(key: tuple) -> MemoryScope:
        return MemoryScope(f"{prefix}{key[0]}", key[1], key[2])

    for op in ops:
        kind = op[0]
        if kind == "write":
            written = await memory.write(scope_of(op[1]), op[2], op[3])
            model.owned(op[1]).add(written.memory.id)
        elif kind == "fact" and op[1][2] is not None:
            await memory.add_facts(scope_of(op[1]), [f"The user mentioned {op[2]}."])
            model.owned(op[1]).update(m.id for m in (await memory.list(scope_of(op[1]), kind="fact")).items)
        elif kind == "delete":
            owned = sorted(model.owned(op[1]))
            if owned:
                victim = owned[op[2] % len(owned)]
                await memory.delete(scope_of(op[1]), victim)
                model.owned(op[1]).discard(victim)
        elif kind == "search":
            hits = await memory.search(scope_of(op[1]), op[2], limit=50, include_messages=True)
            assert {h.id for h in hits} <= model.owned(op[1])
        elif kind == "list":
            listed = {m.id for m in (await memory.list(scope_of(op[1]), query=op[2], limit=1000)).items}
            assert listed <= model.owned(op[1])
            if op[2] is None:
                assert listed == model.owned(op[1])
        elif kind == "erase":
            await memory.erase_user(f"{prefix}{op[1]}", op[2])
            for key in list(model.rows):
                if key[0] == op[1] and key[2] == op[2]:
                    model.rows[key] = set()
    for key, ids in model.rows.items():  # final state: each scope sees exactly its own rows
        scope = scope_of(key)
        assert {m.id for m in (await memory.list(scope, limit=1000)).items} == ids
        block = await memory.render_block(scope, memories=50, facts=50)
        foreign = set().union(*model.rows.values()) - ids
        assert not any(f"[{other}]" in block for other in foreign)


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_random_operations_never_cross_scopes(sqlite_url: str, model_server: ScriptedModelServer,
                                              ops: list) -> None:
    prefix = uuid.uuid4().hex[:8] + "-"  # each example in its own tenants of the shared database

    async def run() -> None:
        async with LongTermMemory.open(sqlite_url, options_for(model_server)) as memory:
            await check(memory, prefix, ops)
    asyncio.run(run())


@pytest.mark.postgres
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_random_operations_never_cross_scopes_on_postgres(postgres_url: str, model_server: ScriptedModelServer,
                                                          ops: list) -> None:
    prefix = uuid.uuid4().hex[:8] + "-"

    async def run() -> None:
        async with LongTermMemory.open(postgres_url, options_for(model_server)) as memory:
            await check(memory, prefix, ops)
    asyncio.run(run())
