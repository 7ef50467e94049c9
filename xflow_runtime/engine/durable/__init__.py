"""The durable engine on DBOS Transact: ``engine.py`` (the DBOS lifecycle), ``port.py`` (the port
inside one instance), ``replay.py`` (the replay rules), ``names.py`` (recorded names, no DBOS),
``client.py`` (reading a store without launching DBOS), ``history.py``, ``subjects.py`` (erasure),
``progress.py`` (restarting the crash count of instances that reached a live wait).

Importing this package does not import DBOS: the names below load on first use, so
``durable.names`` stays cheap for the paths that only need a constant. Pickled records name
``xflow_runtime.engine.durable.DurableEngineError`` (and ``ReplayDiverged``); those names
resolve here.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xflow_runtime.engine.durable.engine import (
        DurableEngine, DurableEngineError, resolve_database_url, stop_running_instances,
    )
    from xflow_runtime.engine.durable.port import DurablePort
    from xflow_runtime.engine.durable.replay import ReplayDiverged

__all__ = ["DurableEngine", "DurableEngineError", "DurablePort", "ReplayDiverged",
           "resolve_database_url", "stop_running_instances"]

_LAZY = {
    "DurableEngine": "engine",
    "DurableEngineError": "engine",
    "resolve_database_url": "engine",
    "stop_running_instances": "engine",
    "DurablePort": "port",
    "ReplayDiverged": "replay",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
