"""Every record xflow hands DBOS is JSON, and a pickled row is refused, never unpickled
(``xflow_runtime/engine/serializer.py``, specs/durability.md §3)."""

from __future__ import annotations

import base64
import json
import os
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, strategies as st
from sqlalchemy import create_engine, text

from xflow_runtime.engine.serializer import (
    NOT_JSON, SERIALIZER, SERIALIZER_NAME, PickledRecordRefused, RecordedError, canonical_error,
    canonical_result, refuse_pickle,
)
from xflow_runtime.errors import WorkflowError
from xflow_runtime.interpreter.failures import Failure
from xflow_runtime.runtime import Runtime
from xflow_runtime.engine.serializer import RecordedFailure

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20)


@given(json_values)
def test_every_json_value_reads_back_as_itself(value: Any) -> None:
    assert SERIALIZER.deserialize(SERIALIZER.serialize(value)) == value


@given(json_values)
def test_a_value_shaped_like_our_tags_is_not_taken_for_an_error(value: Any) -> None:
    for tag in ("$xflow.error", "$xflow.value"):
        assert SERIALIZER.deserialize(SERIALIZER.serialize({tag: value})) == {tag: value}


def test_a_step_result_is_what_a_replay_reads_back() -> None:
    first = canonical_result({"pair": (1, 2), "tags": {"b"}})
    assert first == {"pair": [1, 2], "tags": ["b"]}
    assert SERIALIZER.deserialize(SERIALIZER.serialize(first)) == first
    with pytest.raises(WorkflowError) as raised:
        canonical_result({"blob": object()})
    assert raised.value.code == NOT_JSON


def _matched_as(error: BaseException) -> tuple[Any, ...]:
    failure = Failure.from_exception(error)
    return failure.message, failure.name, failure.code, failure.status, failure.types, failure.details


@pytest.mark.parametrize("error", [
    ValueError("bad amount"), KeyError("missing"), TimeoutError(),
    WorkflowError("declined", name="Declined", code="402", status=402, details={"why": ("x", 1)}),
])
def test_an_error_is_matched_alike_on_the_first_run_and_on_replay(error: Exception) -> None:
    replayed = SERIALIZER.deserialize(SERIALIZER.serialize(error))
    first = canonical_error(error)
    assert _matched_as(first) == _matched_as(replayed)
    # onErrors codes that named the original class (or a base of it) still match
    assert set(Failure.from_exception(error).types) <= set(_matched_as(replayed)[4])
    if not isinstance(error, WorkflowError):
        assert isinstance(replayed, RecordedError) and replayed.code == type(error).__name__


def test_a_recorded_failure_reads_back_as_one() -> None:
    failure = SERIALIZER.deserialize(SERIALIZER.serialize(RecordedFailure("i-1", {"code": "boom", "message": "it broke"})))
    assert isinstance(failure, RecordedFailure) and failure.instance_id == "i-1"
    assert failure.error == {"code": "boom", "message": "it broke"}


def test_dbos_pickle_serializer_is_replaced_by_one_that_refuses() -> None:
    """Pins the DBOS internal we replace: ``dbos._serialization.DBOSDefaultSerializer``, looked up
    by DBOS's decoders at each call."""
    import dbos._serialization as serialization

    refuse_pickle()
    with pytest.raises(PickledRecordRefused):
        serialization.deserialize_value(base64.b64encode(pickle.dumps(1)).decode(), "py_pickle", SERIALIZER)
    with pytest.raises(PickledRecordRefused):
        serialization.serialize_value_as(1, "py_pickle", SERIALIZER)


class _Canary:
    """Unpickling this writes a file: the proof that something unpickled a record."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        return (Path.touch, (Path(self.path),))


WORKFLOW = """
id: records
version: '1.0'
specVersion: '0.8'
start: Go
functions:
  - name: pair
    type: custom
    operation: pair
states:
  - name: Go
    type: operation
    actions:
      - functionRef: pair
    end: true
"""


async def test_the_store_holds_json_and_a_pickled_row_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    (tmp_path / "records.yaml").write_text(WORKFLOW)
    async with Runtime("durable", database_url=url, executor_id="json-records",
                       functions={"pair": lambda **_: {"pair": (1, "ü")}}) as runtime:
        plan = runtime.load(tmp_path / "records.yaml")
        handle = await runtime.start(plan, {"n": 1}, instance_id="json-1")
        assert await handle.result() == {"n": 1, "pair": [1, "ü"]}
    engine = create_engine(url)
    with engine.begin() as connection:
        formats = set(connection.execute(text("SELECT serialization FROM workflow_status")).scalars())
        formats |= set(connection.execute(text("SELECT serialization FROM operation_outputs")).scalars())
        formats |= set(connection.execute(text("SELECT serialization FROM streams")).scalars())
        assert formats - {None} == {SERIALIZER_NAME}
        inputs = connection.execute(text("SELECT inputs FROM workflow_input")).scalar_one()
        assert json.loads(inputs)["args"][0]["input"] == {"n": 1}
        # someone with write access to the database plants a pickle
        canary = tmp_path / "unpickled"
        planted = base64.b64encode(pickle.dumps(_Canary(str(canary)))).decode()
        connection.execute(text("UPDATE workflow_output SET output = :o"), {"o": planted})
        connection.execute(text("UPDATE workflow_status SET serialization = 'py_pickle'"))
    engine.dispose()
    async with Runtime("durable", database_url=url, executor_id="json-records-2") as runtime:
        with pytest.raises(Exception) as raised:
            await runtime.instance("json-1").result()
        assert "pickle" in str(raised.value)
    assert not canary.exists(), "a pickled record was unpickled"
    assert not os.path.exists(canary)
