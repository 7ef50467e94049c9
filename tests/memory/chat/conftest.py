"""Fixtures for chat-memory tests: a ChatMemory on a fresh SQLite file or a fresh PostgreSQL
database (the real server from tests/support/postgres.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from xflow_runtime.memory.chat import ChatMemory


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'chat.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'chat.db'}"
    return request.getfixturevalue("postgres_database_url")


def _opened(url: str) -> Iterator[ChatMemory]:
    chat_memory = ChatMemory.open(url)
    try:
        yield chat_memory
    finally:
        chat_memory.close()


@pytest.fixture
def memory(database_url: str) -> Iterator[ChatMemory]:
    yield from _opened(database_url)


@pytest.fixture
def sqlite_memory(sqlite_url: str) -> Iterator[ChatMemory]:
    yield from _opened(sqlite_url)
