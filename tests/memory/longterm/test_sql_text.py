"""Literals written into PostgreSQL SQL (``sql_text``): any text reads back as itself, whatever
the session's ``standard_conforming_strings`` says (ids come from credentials: any text)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine

from xflow_runtime.memory.longterm.sql_text import quoted, quoted_for_driver

pytestmark = pytest.mark.postgres

HOSTILE = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=40) | \
    st.sampled_from(["\\'; DROP TABLE x; --", "'", "\\", "\\\\'", "''", "%s %(x)s %%", "o'ne\\il"])


@pytest.fixture(scope="module")
def engine(postgres_url: str):  # type: ignore[no-untyped-def]
    engine = create_engine(postgres_url.replace("postgresql://", "postgresql+psycopg://", 1))
    yield engine
    engine.dispose()


@pytest.mark.parametrize("conforming", ["on", "off"])
@settings(max_examples=60, deadline=None)
@given(value=HOSTILE)
def test_a_quoted_value_reads_back_as_itself_under_either_string_syntax(engine, conforming: str, value: str) -> None:
    with engine.connect() as connection:
        connection.exec_driver_sql(f"SET standard_conforming_strings = {conforming}")
        assert connection.exec_driver_sql(f"SELECT {quoted_for_driver(value)}").scalar() == value
        with connection.connection.driver_connection.cursor() as cursor:  # no parameters: nothing formats
            cursor.execute(f"SELECT {quoted(value)}")
            assert cursor.fetchone()[0] == value
        connection.rollback()


def test_a_nul_character_is_refused() -> None:
    with pytest.raises(ValueError):
        quoted("a\x00b")
