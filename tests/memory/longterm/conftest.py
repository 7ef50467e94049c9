"""Fixtures for long-term memory tests: a LongTermMemory on a fresh SQLite file or a fresh
PostgreSQL database (real server, pgvector), with embeddings and extraction calls going through
litellm over HTTP to the scripted model server."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from tests.support.postgres import _admin_execute

from xflow_runtime.memory.longterm import LongTermMemory, LongTermOptions
from xflow_runtime.testing import ScriptedModelServer

EMBEDDING_MODEL = "openai/text-embedding-3-small"
EXTRACTION_MODEL = "openai/gpt-4o-mini"
TODAY = date(2026, 3, 6)  # a Friday: relative dates in the prompt are computed from it


@pytest.fixture(scope="session")
def migrated_template(postgres_server: Any) -> str:
    """A database migrated once per session; each test copies it (CREATE DATABASE … TEMPLATE)."""
    from xflow_runtime.storage import open_database

    name = "xflow_longterm_template"
    _admin_execute(postgres_server, f"CREATE DATABASE {name}")
    open_database(postgres_server.get_uri(database=name, driver="psycopg")).dispose()
    return name


@pytest.fixture
def fresh_postgres_url(postgres_server: Any, migrated_template: str) -> Iterator[str]:
    name = f"xflow_lt_{uuid.uuid4().hex[:12]}"
    _admin_execute(postgres_server, f"CREATE DATABASE {name} TEMPLATE {migrated_template}")
    try:
        yield postgres_server.get_uri(database=name, driver="psycopg")
    finally:
        _admin_execute(postgres_server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'longterm.db'}"
    return request.getfixturevalue("fresh_postgres_url")


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'longterm.db'}"


@pytest.fixture
def model_server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


def options_for(server: ScriptedModelServer, **overrides: object) -> LongTermOptions:
    values = dict(embedding_model=EMBEDDING_MODEL, api_base=server.api_base, api_key="test-key",
                  extraction_retry_base_s=0.05)
    values.update(overrides)
    return LongTermOptions(**values)  # type: ignore[arg-type]


async def _opened(url: str, server: ScriptedModelServer) -> AsyncIterator[LongTermMemory]:
    lt = LongTermMemory.open(url, options_for(server), today=lambda: TODAY)
    try:
        yield lt
    finally:
        await lt.aclose()


@pytest.fixture
async def memory(database_url: str, model_server: ScriptedModelServer) -> AsyncIterator[LongTermMemory]:
    async for lt in _opened(database_url, model_server):
        yield lt


@pytest.fixture
async def sqlite_memory(sqlite_url: str, model_server: ScriptedModelServer) -> AsyncIterator[LongTermMemory]:
    async for lt in _opened(sqlite_url, model_server):
        yield lt


def embedding_requests(server: ScriptedModelServer) -> list:
    return [r for r in server.requests if r.path.endswith("/embeddings")]
