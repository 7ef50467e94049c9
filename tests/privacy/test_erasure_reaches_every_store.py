"""GDPR erasure through the Python API, on SQLite and a real PostgreSQL: afterwards a scan of every
table and every text/binary column of both stores — DBOS's JSON records decoded — finds neither
what the user said nor their id; the other user's data is untouched; the receipt counts what was
there; a second erasure deletes nothing; export before and after."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from tests.privacy.conftest import ERASED, KEPT, OTHER_PHRASE, PHRASE, TENANT, Stores, seed
from tests.privacy.scan import traces
from xflow_runtime import erase_user, export_user
from xflow_runtime.engine.durable.subjects import INSTANCE_TABLES, POSTGRES_SCHEMA
from xflow_runtime.privacy.export import is_empty

pytestmark = pytest.mark.slow

#: our memory tables and the receipt name of what each holds of a user
MEMORY_COUNTS = {
    "chats": "SELECT count(*) FROM xflow_chats WHERE tenant_id = :t AND user_id = :u",
    "chat_messages": "SELECT count(*) FROM xflow_chat_messages WHERE tenant_id = :t AND user_id = :u",
    "memories": "SELECT count(*) FROM xflow_memories WHERE tenant_id = :t AND user_id = :u AND kind = 'memory'",
    "facts": "SELECT count(*) FROM xflow_memories WHERE tenant_id = :t AND user_id = :u AND kind = 'fact'",
    "extraction_jobs": "SELECT count(*) FROM xflow_extraction_jobs WHERE tenant_id = :t AND user_id = :u",
    "embeddings": "SELECT count(*) FROM xflow_memories WHERE tenant_id = :t AND user_id = :u AND embedding IS NOT NULL",
    "message_embeddings": "SELECT count(*) FROM xflow_message_embeddings WHERE tenant_id = :t AND user_id = :u",
    "api_keys": "SELECT count(*) FROM xflow_api_keys WHERE tenant_id = :t AND user_id = :u",
    "user_tasks": "SELECT count(*) FROM xflow_user_tasks WHERE tenant_id = :t AND instance_id IN ('erase-a', 'erase-b')",
    "agent_proxy_requests": "SELECT count(*) FROM xflow_agent_proxy_requests WHERE tenant_id = :t "
                            "AND instance_id IN ('erase-a', 'erase-b')",
    "a2a_push_configs": "SELECT count(*) FROM xflow_a2a_push_configs WHERE tenant_id = :t "
                        "AND task_id IN ('erase-a', 'erase-b')",
}


def memory_counts(url: str, user: str) -> dict[str, int]:
    engine = create_engine(url)
    with engine.connect() as connection:
        counts = {name: connection.execute(text(sql), {"t": TENANT, "u": user}).scalar_one()
                  for name, sql in MEMORY_COUNTS.items()}
    engine.dispose()
    return counts


def durable_counts(url: str, instance_ids: list[str]) -> dict[str, int]:
    """Rows of the instances in every DBOS table that names an instance, found by inspecting the
    live schema (not from the production list), so a table DBOS adds is noticed."""
    engine = create_engine(url)
    schema = None if engine.dialect.name == "sqlite" else POSTGRES_SCHEMA
    found: dict[str, int] = {}
    inspector = inspect(engine)
    with engine.connect() as connection:
        for table in inspector.get_table_names(schema=schema):
            if table.startswith("xflow_") or table == "alembic_version" or table.startswith("dbos_"):
                continue
            columns = {c["name"] for c in inspector.get_columns(table, schema=schema)}
            for column in ("workflow_uuid", "destination_uuid"):
                if column in columns:
                    name = f'"{schema}"."{table}"' if schema else f'"{table}"'
                    found[table] = connection.execute(
                        text(f"SELECT count(*) FROM {name} WHERE {column} IN ('erase-a', 'erase-b')")).scalar_one()
    engine.dispose()
    assert set(found) <= {t for t, _ in INSTANCE_TABLES}, f"DBOS has a table erasure does not know: {found}"
    return found


def everywhere(stores: Stores, needles: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for url in stores.scan_urls():
        found.update(traces(url, needles))
    return found


def give_keys(memory_url: str) -> None:
    """An API key of the service for each user: erasure deletes the erased user's."""
    from xflow_runtime.service.api_keys import ApiKeyStore

    keys = ApiKeyStore(memory_url)
    try:
        for user in (ERASED, KEPT):
            keys.create(TENANT, user=user, role="user", name="phone")
    finally:
        keys.close()
    # and a webhook the erased user's A2A client gave for one of their instances (specs/a2a.md)
    from xflow_runtime.service.a2a_push import PushConfigs

    configs = PushConfigs(memory_url)
    try:
        configs.put(TENANT, "erase-a", {"url": "https://hooks.example.com/a2a", "token": f"token-of-{ERASED}"})
    finally:
        configs.close()


async def test_erasure_leaves_no_trace_in_either_store(stores: Stores, workflow: Path, llm) -> None:
    runtime = await seed(stores, workflow, llm)
    give_keys(stores.memory_url)
    try:
        seen = everywhere(stores, [PHRASE])  # the scan sees the user's words, DBOS's decoded ones too
        for table in ("workflow_input", "operation_outputs", "streams", "notifications",
                      "xflow_chat_messages", "xflow_memories"):
            assert any(f'"{table}"' in place for place in seen), (table, seen)
        before_memory = memory_counts(stores.memory_url, ERASED)
        before_durable = durable_counts(stores.durable_url, ["erase-a", "erase-b"])
        assert before_memory["chat_messages"] >= 4 and before_memory["facts"] == 1 and before_memory["memories"] == 1
        assert before_memory["a2a_push_configs"] == 1
        assert before_durable["operation_outputs"] > 0 and before_durable["streams"] > 0
        assert before_durable["notifications"] == 1  # the event queued for the waiting instance
        kept_before = await export_user(KEPT, tenant=TENANT, database_url=stores.url)

        receipt = await erase_user(ERASED, tenant=TENANT, database_url=stores.url)  # while the runtime runs
    finally:
        await runtime.close()

    assert receipt.cancelled_instances == ("erase-b",)
    assert dict(receipt.store("memory").deleted) == before_memory
    assert {t: n for t, n in receipt.store("durable").deleted.items() if n} == \
        {t: n for t, n in before_durable.items() if n}
    assert receipt.total == sum(before_memory.values()) + sum(before_durable.values())

    assert everywhere(stores, [PHRASE, ERASED]) == {}
    kept_traces = everywhere(stores, [OTHER_PHRASE])
    assert any("operation_outputs" in place for place in kept_traces), "decoding DBOS values works"
    assert any("xflow_chat_messages" in place for place in kept_traces)
    assert await export_user(KEPT, tenant=TENANT, database_url=stores.url) == kept_before
    assert memory_counts(stores.memory_url, KEPT)["chat_messages"] == 2

    again = await erase_user(ERASED, tenant=TENANT, database_url=stores.url)
    assert again.total == 0 and again.cancelled_instances == ()
    assert again.erasure_epoch == receipt.erasure_epoch + 1
    if stores.url.startswith("sqlite"):  # nor in the files' bytes (freed pages, WAL)
        for url in stores.scan_urls():
            path = Path(url.removeprefix("sqlite:///"))
            for file in (path, path.with_name(path.name + "-wal")):
                if file.exists():
                    content = file.read_bytes()
                    assert not [form for form in encoded_forms(PHRASE) if form in content], file


def encoded_forms(phrase: str) -> list[bytes]:
    """``phrase`` as stored in clear, and as it shows inside DBOS's base64 text at each of the
    three alignments (the characters that depend on the phrase's bytes alone)."""
    raw = phrase.encode()
    forms = [raw]
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + raw)
        forms.append(encoded[4 if offset else 0:-4])
    return forms


async def test_export_then_erase_then_export_is_empty(stores: Stores, workflow: Path, llm) -> None:
    runtime = await seed(stores, workflow, llm)
    await runtime.close()
    document = await export_user(ERASED, tenant=TENANT, database_url=stores.url)
    json.dumps(document)  # one JSON document
    assert {i["instance_id"] for i in document["instances"]} == {"erase-a", "erase-b"}
    finished = next(i for i in document["instances"] if i["instance_id"] == "erase-a")
    assert finished["input"] == {"message": f"please remember {PHRASE}"}
    assert finished["output"]["response"] == f"Noted {PHRASE}" and finished["history"]
    memory = document["memory"]
    assert memory["present"] and [c["agent"] for c in memory["chats"]] == ["concierge"]
    assert PHRASE in json.dumps(memory["chats"][0]["messages"])
    assert [m["title"] for m in memory["memories"]] == ["Locker"]
    assert [f["content"] for f in memory["facts"]] == [f"The user's locker code is {PHRASE}"]
    assert OTHER_PHRASE not in json.dumps(document)

    await erase_user(ERASED, tenant=TENANT, database_url=stores.url)
    after = await export_user(ERASED, tenant=TENANT, database_url=stores.url)
    assert is_empty(after), after
    assert not is_empty(await export_user(KEPT, tenant=TENANT, database_url=stores.url))
