"""A fleet-wide rate limit on LLM calls, per provider or per model, kept in PostgreSQL.

DBOS's queue limiter counts workflow *starts*; a provider's limit is on *requests*. So every LLM
call of a fleet worker first takes a slot here: a fixed window per limit key (``window_no`` =
database epoch seconds // period, so workers' clocks do not matter), counted with one upsert. A
call that finds its window full waits for the next one and tries again. Fixed windows allow up
to twice the limit across a window boundary; a waiting call holds nothing (a dead worker frees
nothing because it took nothing beyond its count). Spec: specs/deployment.md §1.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

from sqlalchemy import Engine, text

from xflow_runtime.errors import XFlowError

_TAKE = text(
    "INSERT INTO xflow_rate_windows (key, window_no, used) "
    "VALUES (:key, floor(extract(epoch FROM clock_timestamp()) / :period)::bigint, 1) "
    "ON CONFLICT (key, window_no) DO UPDATE SET used = xflow_rate_windows.used + 1 "
    "RETURNING used, (window_no + 1) * :period - extract(epoch FROM clock_timestamp())")
_FORGET = text("DELETE FROM xflow_rate_windows WHERE key = :key AND window_no < "
               "floor(extract(epoch FROM clock_timestamp()) / :period)::bigint - 1")


@dataclass(frozen=True)
class RateLimit:
    """At most ``calls`` LLM calls per ``period`` seconds to models matching ``key``: a provider
    (``openai`` matches ``openai/gpt-4o``) or a model (``gpt-4o``, ``openai/gpt-4o``)."""

    key: str
    calls: int
    period: float

    @classmethod
    def parse(cls, text_: str) -> "RateLimit":
        """``KEY=CALLS/SECONDS`` (``openai=600/60``)."""
        key, _, rate = text_.partition("=")
        calls, _, seconds = rate.partition("/")
        try:
            limit = cls(key.strip(), int(calls), float(seconds or 60))
        except ValueError:
            limit = None
        if limit is None or not limit.key or limit.calls < 1 or limit.period <= 0:
            raise XFlowError(f"rate limit {text_!r}: expected KEY=CALLS/SECONDS, e.g. openai=600/60")
        return limit

    def matches(self, model: str) -> bool:
        provider, _, name = model.rpartition("/")
        return self.key in (model, name, provider or "openai")


class FleetRateLimiter:
    """``await limiter(model)`` before each LLM call: returns once every matching limit has a slot."""

    def __init__(self, engine: Engine, limits: list[RateLimit]) -> None:
        self.engine = engine
        self.limits = limits
        self._calls = 0

    async def __call__(self, model: str) -> None:
        for limit in self.limits:
            if limit.matches(model):
                await self._acquire(limit)

    async def _acquire(self, limit: RateLimit) -> None:
        while True:
            used, left = await asyncio.to_thread(self._take, limit)
            if used <= limit.calls:
                return
            await asyncio.sleep(max(float(left), 0.0) + random.uniform(0, min(0.05, limit.period / 20)))

    def _take(self, limit: RateLimit) -> tuple[int, float]:
        params = {"key": limit.key, "period": limit.period}
        with self.engine.begin() as connection:
            used, left = connection.execute(_TAKE, params).one()
            self._calls += 1
            if self._calls % 200 == 0:  # old windows are kept only until then
                connection.execute(_FORGET, params)
        return int(used), float(left)
