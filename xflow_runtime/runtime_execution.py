"""Where the durable store's older records look for :class:`RecordedFailure`.

DBOS pickles a failed instance's exception with its class's module path, and records written
before the runtime became one package name ``xflow_runtime.runtime_execution``. This name keeps
them readable (``xflow show``, ``result()``); nothing else should import it.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "RecordedFailure":
        from xflow_runtime.runtime.execution import RecordedFailure

        return RecordedFailure
    raise AttributeError(name)
