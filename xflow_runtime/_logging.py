"""A logging handler for the command line and DBOS's logger (internal)."""

from __future__ import annotations

import logging
import sys
from typing import Any


class CurrentStderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record is logged. A plain handler keeps the
    stream of the moment it was created, which breaks once an embedder or a test harness swaps
    and closes that stream (and ``xflow``'s ``main()`` may run again in one process)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass
