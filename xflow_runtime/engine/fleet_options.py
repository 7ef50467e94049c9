"""How a durable runtime takes part in a worker fleet (importable without DBOS or SQLAlchemy)."""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass, field

#: Every fleet worker's executor id starts with this (and has a row in ``xflow_workers``).
EXECUTOR_PREFIX = "xw-"


def new_executor_id() -> str:
    """A fresh executor id: host, pid and a random part, so no two processes ever share one."""
    return f"{EXECUTOR_PREFIX}{socket.gethostname()[:40]}-{os.getpid()}-{secrets.token_hex(4)}"


@dataclass(frozen=True)
class FleetTimes:
    """Heartbeat, death and sweep periods. The takeover bound is ``dead_after + reap + queue poll +
    replay``: about 23 s with the defaults (specs/deployment.md)."""

    heartbeat: float = 2.0
    dead_after: float = 20.0   # T: a worker silent this long is dead
    reap: float = 2.0          # P: how often a sweep runs
    orphan_sweep: float = 15.0

    @property
    def lease(self) -> float:
        """L: a worker starts no effect this long after its last successful heartbeat."""
        return self.dead_after / 2

    @classmethod
    def from_environment(cls) -> "FleetTimes":
        """``$XFLOW_DEAD_AFTER_SECONDS`` (default 20) sets T; the other periods follow from it."""
        dead_after = float(os.environ.get("XFLOW_DEAD_AFTER_SECONDS", "20"))
        if dead_after < 1:
            raise ValueError("XFLOW_DEAD_AFTER_SECONDS must be at least 1")
        return cls(heartbeat=min(2.0, dead_after / 5), dead_after=dead_after, reap=min(2.0, dead_after / 5),
                   orphan_sweep=min(15.0, dead_after))


@dataclass(frozen=True)
class FleetOptions:
    """``run_instances=False``: this process only starts instances (a service front end); they run on
    the workers. Limits are fleet-wide queue settings (DBOS keeps one row per queue): the last
    worker started sets them.

    - ``worker_concurrency``: instances one worker runs at once (waiting ones count);
    - ``global_concurrency``: instances the whole fleet runs at once;
    - ``starts_per_period``: at most ``(n, seconds)`` instance starts in any rolling window;
    - ``llm_rate_limits``: ``KEY=CALLS/SECONDS`` per provider or model, fleet-wide
      (:mod:`~xflow_runtime.engine.rate_limit`).
    """

    run_instances: bool = True
    worker_concurrency: int | None = None
    global_concurrency: int | None = None
    starts_per_period: tuple[int, float] | None = None
    llm_rate_limits: tuple[str, ...] = ()
    polling_seconds: float = 0.25
    times: FleetTimes = field(default_factory=FleetTimes.from_environment)
