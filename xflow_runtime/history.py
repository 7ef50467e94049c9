"""An instance's history: which states it entered, with what input, what came out, how long it
took, what failed — and, for LLM calls, token usage and cost.

Records are appended in the order the interpreter reports them, and each carries its sequence
number (``seq``). On the durable engine they go to a DBOS stream keyed by instance id + offset and
every append is a checkpointed operation, so a replayed instance does not append a record twice;
on the in-process engine they stay in memory with the instance.

This module is pure: it builds records and summarizes them; where records go is the sink's job.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable

#: Record kinds. ``usage`` (token counts and cost of LLM calls) is filled by AI states.
INSTANCE_STARTED = "instance.started"
INSTANCE_COMPLETED = "instance.completed"
INSTANCE_FAILED = "instance.failed"
STATE_ENTERED = "state.entered"
STATE_EXITED = "state.exited"
STATE_FAILED = "state.failed"
EVENT_PRODUCED = "event.produced"

Sink = Callable[[dict[str, Any]], Awaitable[None]]


class HistoryRecorder:
    """What the interpreter calls to report progress. Every method appends one record.

    ``clock`` gives the timestamp of a record (wall time at the first run; a replay does not
    rewrite records, so their times stay those of the first run). ``listeners`` see every record
    as it is reported, replayed ones included (the CLI's progress display uses one).
    """

    def __init__(self, sink: Sink | None = None, *, clock: Callable[[], float] = time.time,
                 listeners: Iterable[Callable[[dict[str, Any]], None]] = ()) -> None:
        self._sink = sink
        self._clock = clock
        self._listeners = list(listeners)
        self._seq = 0
        self.records: list[dict[str, Any]] = []  # kept only when there is no sink

    async def _append(self, kind: str, **fields: Any) -> None:
        record = {"seq": self._seq, "kind": kind, "at": self._clock(),
                  **{k: v for k, v in fields.items() if v is not None}}
        self._seq += 1
        for listener in self._listeners:
            listener(record)
        if self._sink is None:
            self.records.append(record)
        else:
            await self._sink(record)

    async def instance_started(self, workflow: str, input: Any) -> None:
        await self._append(INSTANCE_STARTED, workflow=workflow, input=input)

    async def instance_completed(self, output: Any) -> None:
        await self._append(INSTANCE_COMPLETED, output=output)

    async def instance_failed(self, error: dict[str, Any]) -> None:
        await self._append(INSTANCE_FAILED, error=error)

    async def state_entered(self, state: str, input: Any) -> None:
        await self._append(STATE_ENTERED, state=state, input=input)

    async def state_exited(self, state: str, output: Any, usage: dict[str, Any] | None = None) -> None:
        """``usage``: ``{"prompt_tokens", "completion_tokens", "total_tokens", "cost"}`` summed over
        the state's LLM calls (AI states), else ``None``."""
        await self._append(STATE_EXITED, state=state, output=output, usage=usage)

    async def state_failed(self, state: str, error: dict[str, Any]) -> None:
        await self._append(STATE_FAILED, state=state, error=error)

    async def event_produced(self, event: dict[str, Any]) -> None:
        await self._append(EVENT_PRODUCED, event=event)


@dataclass
class StateVisit:
    """One visit of a state, assembled from its records."""

    state: str
    entered_at: float
    input: Any = None
    output: Any = None
    error: dict[str, Any] | None = None
    exited_at: float | None = None
    usage: dict[str, Any] | None = None

    @property
    def duration(self) -> float | None:
        return None if self.exited_at is None else max(self.exited_at - self.entered_at, 0.0)

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "entered_at": self.entered_at, "duration": self.duration,
                "input": self.input, "output": self.output, "error": self.error, "usage": self.usage}


@dataclass
class HistorySummary:
    visits: list[StateVisit] = field(default_factory=list)
    input: Any = None
    output: Any = None
    error: dict[str, Any] | None = None
    produced_events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def usage(self) -> dict[str, Any] | None:
        """Token usage and cost summed over every state that reported some."""
        reported = [v.usage for v in self.visits if v.usage]
        if not reported:
            return None
        total: dict[str, Any] = {}
        for usage in reported:
            for key, value in usage.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    total[key] = total.get(key, 0) + value
        return total


def summarize(records: Iterable[dict[str, Any]]) -> HistorySummary:
    """Fold records into state visits. A state entered again (a loop) is a new visit."""
    summary = HistorySummary()
    open_visits: dict[str, StateVisit] = {}
    for record in sorted(records, key=lambda r: r["seq"]):
        kind, state = record["kind"], record.get("state")
        if kind == INSTANCE_STARTED:
            summary.input = record.get("input")
        elif kind == INSTANCE_COMPLETED:
            summary.output = record.get("output")
        elif kind == INSTANCE_FAILED:
            summary.error = record.get("error")
        elif kind == EVENT_PRODUCED:
            summary.produced_events.append(record.get("event", {}))
        elif kind == STATE_ENTERED and state is not None:
            visit = StateVisit(state=state, entered_at=record["at"], input=record.get("input"))
            open_visits[state] = visit
            summary.visits.append(visit)
        elif kind in (STATE_EXITED, STATE_FAILED) and state in open_visits:
            visit = open_visits.pop(state)
            visit.exited_at = record["at"]
            visit.output = record.get("output")
            visit.error = record.get("error")
            visit.usage = record.get("usage")
    return summary
