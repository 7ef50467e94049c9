"""The one format of every value xflow hands DBOS: JSON, never pickle.

DBOS records instance inputs, outputs, step results and errors, messages, stream values (history)
and schedule contexts through a *serializer*; its default pickles them, so whoever can write one
row of the shared database could run code in every worker that reads it, and nothing outside
Python could read the records. Ours (:class:`JSONSerializer`, recorded under the name
:data:`SERIALIZER_NAME`) writes JSON:

- values as themselves (SW 0.8 data is JSON); a top-level object whose only key is one of our tags
  is wrapped in :data:`VALUE_TAG` so it is never mistaken for an error;
- exceptions as ``{"$xflow.error": {type, types, message, name, code, status, details, ...}}``,
  read back as the same :class:`~xflow_runtime.errors.WorkflowError` /
  :class:`RecordedFailure`, any other class as
  :class:`RecordedError` carrying the original class names (``onErrors`` matches them).

DBOS decodes a row by the serializer name recorded in it, and would still unpickle a row marked
``py_pickle`` whatever serializer is configured. :func:`refuse_pickle` replaces DBOS's pickle
serializer (the module attribute ``dbos._serialization.DBOSDefaultSerializer``, a DBOS internal
named in specs/durability.md and pinned by ``tests/engine/test_json_records.py``) with one that
refuses to read or write: such a row raises :class:`PickledRecordRefused` and nothing is unpickled.

Steps canonicalize what they return (:func:`canonical_result`, :func:`canonical_error`), so the
first run sees exactly what a replay reads back (a tuple is a list in both).
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from dbos import Serializer

from xflow_runtime.errors import WorkflowError, WorkflowFailed, XFlowError

#: The name DBOS records with every row we write (its ``serialization`` column).
SERIALIZER_NAME = "xflow_json_v1"
ERROR_TAG = "$xflow.error"
VALUE_TAG = "$xflow.value"
#: DBOS's name for its pickle format.
PICKLE_NAME = "py_pickle"
#: The code of a step whose result is not JSON (it is recorded as that error).
NOT_JSON = "NotJSON"


class RecordedFailure(WorkflowFailed):
    """The failure a durable instance records as its outcome, read back as the same class."""


class PickledRecordRefused(XFlowError):
    """A record of the durable store was written with pickle: xflow never unpickles what it reads."""


class RecordedError(WorkflowError):
    """An exception read back from a record, of a class we do not rebuild: it keeps the original
    class names (``recorded_types``), which ``onErrors`` codes match as they did the original."""

    def __init__(self, message: str, *, recorded_type: str, recorded_types: tuple[str, ...], **fields: Any) -> None:
        super().__init__(message, **fields)
        self.recorded_type = recorded_type
        self.recorded_types = recorded_types


def _fallback(value: Any) -> Any:
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    raise TypeError(f"a value of type {type(value).__name__} is not JSON")


def dumps(value: Any) -> str:
    return json.dumps(value, default=_fallback, ensure_ascii=False, separators=(",", ":"))


def canonical_result(value: Any) -> Any:
    """``value`` as a replay will read it back (raises :class:`WorkflowError` ``NotJSON`` if it
    cannot be recorded: the step's error is then what is recorded, and replayed)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    try:
        return json.loads(dumps(value))
    except (TypeError, ValueError) as error:
        raise WorkflowError(f"a step returned a value that cannot be recorded as JSON: {error}",
                            code=NOT_JSON) from None


def _type_names(kind: type) -> tuple[str, ...]:
    names: list[str] = []
    for klass in kind.__mro__:
        if klass is not object:
            names += [klass.__name__, f"{klass.__module__}.{klass.__qualname__}"]
    return tuple(names)


def _json_or_text(value: Any) -> Any:
    try:
        return json.loads(dumps(value))
    except (TypeError, ValueError):
        return str(value)


def encode_error(error: BaseException) -> dict[str, Any]:
    kind = type(error)
    encoded: dict[str, Any] = {
        "type": f"{kind.__module__}.{kind.__qualname__}",
        "types": list(getattr(error, "recorded_types", None) or _type_names(kind)),
        "message": str(error),
    }
    if isinstance(error, WorkflowError):
        encoded.update(name=error.name, code=error.code, status=error.status,
                       details=_json_or_text(error.details))
        if isinstance(error, RecordedError):
            encoded["type"] = error.recorded_type
    elif isinstance(error, WorkflowFailed):
        encoded.update(instance_id=error.instance_id, error=_json_or_text(error.error))
    return encoded


def decode_error(data: dict[str, Any]) -> Exception:
    kind = str(data.get("type") or "Exception")
    message = str(data.get("message") or "")
    types = tuple(data.get("types") or ())
    if "instance_id" in data:
        return RecordedFailure(str(data["instance_id"]), data.get("error") or {"message": message})
    fields: dict[str, Any] = {"name": data.get("name"), "code": data.get("code"), "status": data.get("status"),
                              "details": data.get("details")}
    if kind == "xflow_runtime.errors.WorkflowError":
        return WorkflowError(message, **fields)
    if "name" not in data:  # not a WorkflowError: onErrors matched its class name as the code
        fields["code"] = kind.rpartition(".")[2]
        message = message or fields["code"]
    return RecordedError(message, recorded_type=kind, recorded_types=types, **fields)


def canonical_error(error: Exception) -> Exception:
    """``error`` as a replay will read it back."""
    return decode_error(json.loads(dumps(encode_error(error))))


class JSONSerializer(Serializer):
    """DBOS's serializer for xflow: JSON text, exceptions tagged (see the module)."""

    def name(self) -> str:
        return SERIALIZER_NAME

    def serialize(self, data: Any) -> str:
        if isinstance(data, BaseException):
            return dumps({ERROR_TAG: encode_error(data)})
        if isinstance(data, dict) and len(data) == 1 and (ERROR_TAG in data or VALUE_TAG in data):
            data = {VALUE_TAG: data}
        return dumps(data)

    def deserialize(self, serialized_data: str) -> Any:
        value = json.loads(serialized_data)
        if isinstance(value, dict) and len(value) == 1:
            if ERROR_TAG in value:
                return decode_error(value[ERROR_TAG])
            if VALUE_TAG in value:
                return value[VALUE_TAG]
        return value


class RefusePickle(Serializer):
    """Stands in for DBOS's pickle serializer: reads and writes of ``py_pickle`` rows fail."""

    def name(self) -> str:
        return PICKLE_NAME

    def serialize(self, data: Any) -> str:
        raise PickledRecordRefused("xflow records values as JSON; it never writes pickle")

    def deserialize(self, serialized_data: str) -> Any:
        raise PickledRecordRefused(
            "this record of the durable store was written with pickle (by xflow-runtime before JSON "
            "records, or by another program): xflow never unpickles what it reads. Finish such instances "
            "with the release that started them, or erase them (specs/durability.md §3)")


def refuse_pickle() -> None:
    """Make DBOS refuse rows marked ``py_pickle`` (idempotent). DBOS's decoders look its pickle
    serializer up as a module attribute at each call, so replacing it covers every path."""
    import dbos._serialization as serialization

    if not isinstance(serialization.DBOSDefaultSerializer, RefusePickle):
        serialization.DBOSDefaultSerializer = RefusePickle()


SERIALIZER = JSONSerializer()
