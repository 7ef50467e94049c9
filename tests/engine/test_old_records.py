"""A failure recorded before the runtime became a package still unpickles (DBOS stores the
exception's class by its old module path)."""

from __future__ import annotations

import pickle

from xflow_runtime.runtime.execution import RecordedFailure


def test_a_failure_recorded_under_the_old_module_path_is_read_back() -> None:
    recorded = pickle.dumps(RecordedFailure("i-1", {"code": "boom", "message": "it broke"}), protocol=4)
    old = recorded.replace(b"xflow_runtime.runtime.execution", b"xflow_runtime.runtime_execution")
    assert old != recorded
    failure = pickle.loads(old)
    assert isinstance(failure, RecordedFailure) and failure.instance_id == "i-1"
    assert failure.error["code"] == "boom"
