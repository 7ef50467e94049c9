"""One rule for where things are (xflow_runtime.settings): every entry point derives the durable
store and memory from the same setting."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from xflow_runtime.runtime import Runtime
from xflow_runtime.settings import DEFAULT_DURABLE_URL, locate, memory_url_of, redact


def test_explicit_beats_the_environment_beats_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("XFLOW_DATABASE_URL", raising=False)
    default = locate(None)
    assert (default.durable_url, default.memory_url, default.origin) == (
        f"sqlite:///{tmp_path / '.xflow' / 'xflow.sqlite'}", f"sqlite:///{tmp_path / '.xflow' / 'xflow.db'}", "default")
    assert DEFAULT_DURABLE_URL == "sqlite:///.xflow/xflow.sqlite"
    monkeypatch.setenv("XFLOW_DATABASE_URL", "sqlite:///data/run.sqlite")
    from_env = locate(None)
    assert (from_env.durable_url, from_env.memory_url, from_env.origin) == (
        f"sqlite:///{tmp_path / 'data' / 'run.sqlite'}", f"sqlite:///{tmp_path / 'data' / 'xflow.db'}", "environment")
    assert locate("postgres://u:secret@h/db") == locate("postgresql://u:secret@h/db")
    explicit = locate("postgres://u:secret@h/db")
    assert explicit.durable_url == explicit.memory_url == "postgresql://u:secret@h/db" and explicit.origin == "explicit"
    assert redact(explicit.memory_url) == "postgresql://u:***@h/db"


def test_every_entry_point_asks_the_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from xflow_runtime.engine.durable import resolve_database_url
    from xflow_runtime.storage import default_database_url

    url = f"sqlite:///{tmp_path / 'store' / 'xflow.sqlite'}"
    monkeypatch.setenv("XFLOW_DATABASE_URL", url)
    where = locate(None)
    assert resolve_database_url(None) == where.durable_url == url
    # ChatMemory.open() / LongTermMemory.open() without a URL: memory, not the durable file (the bug)
    assert default_database_url() == where.memory_url == f"sqlite:///{tmp_path / 'store' / 'xflow.db'}"
    assert Runtime("durable").chat_memory_url == where.memory_url
    assert Runtime(database_url=url).chat_memory_url == where.memory_url


names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-.", min_size=1, max_size=12).filter(
    lambda name: name not in (".", ".."))


@given(directory=st.lists(names, max_size=3), file=names)
def test_memory_sits_beside_a_sqlite_store_and_naming_it_finds_it_again(directory: list[str], file: str) -> None:
    store = Path("/srv", *directory, file)
    memory = memory_url_of(f"sqlite:///{store}")
    assert memory == f"sqlite:///{store.parent / 'xflow.db'}"
    assert locate(memory).memory_url == memory  # --db pointed at the memory file finds the same memory
