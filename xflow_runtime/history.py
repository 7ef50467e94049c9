"""An instance's history: which states it entered, with what input, what came out, how long it
took, what failed — and, for LLM calls, token usage and cost (``usage`` on a state's exit record).

The interpreter reports progress to a synchronous observer (``ExecutionContext.observer``) with
dicts like ``{"event": "state_entered", "state": …, "input": …}``. :class:`HistoryBuffer` is that
observer: it stamps each record with its sequence number (``seq``) and time (``at``) and keeps it
until the engine stores it. On the durable engine, records are flushed to a DBOS stream at the
next engine call, as one checkpointed write keyed by instance id + offset, so a replayed instance
does not store a record twice; on the in-process engine they stay in memory with the instance.

Everything here is pure: building records and folding them into state visits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

# The record kinds this module folds into visits (the one list: interpreter/records.py).
from xflow_runtime.interpreter.records import (
    EVENT_PRODUCED, LLM_CALL, STATE_ENTERED, STATE_EXITED, STATE_FAILED, WORKFLOW_COMPLETED, WORKFLOW_FAILED,
    WORKFLOW_STARTED,
)

Listener = Callable[[dict[str, Any]], None]



class HistoryBuffer:
    """The interpreter's observer. ``listeners`` see every record as it is reported (replayed
    ones included: the CLI's progress display is one)."""

    def __init__(self, *, clock: Callable[[], float] = time.time,
                 listeners: Iterable[Listener] = (), keep: bool = False) -> None:
        self._clock = clock
        self._listeners = list(listeners)
        self._seq = 0
        self._pending: list[dict[str, Any]] = []
        self._keep = keep
        #: Every record so far, when ``keep`` (the in-process engine's history).
        self.records: list[dict[str, Any]] = []

    def __call__(self, fields: dict[str, Any]) -> None:
        record = {"seq": self._seq, "at": self._clock(), **fields}
        self._seq += 1
        self._pending.append(record)
        if self._keep:
            self.records.append(record)
        for listener in self._listeners:
            listener(record)

    @property
    def pending(self) -> int:
        """How many records were reported since the last drain."""
        return len(self._pending)

    def drain(self) -> list[dict[str, Any]]:
        """The records reported since the last drain, in order."""
        pending, self._pending = self._pending, []
        return pending


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

    def add_usage(self, usage: dict[str, Any]) -> None:
        """Add one LLM call's token counts and cost (``calls`` counts the calls)."""
        total = dict(self.usage or {})
        total["calls"] = total.get("calls", 0) + 1
        for key, value in usage.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
        self.usage = total

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
        """Token usage and cost summed over every state that reported some (``None`` if none)."""
        total: dict[str, Any] = {}
        for visit in self.visits:
            for key, value in (visit.usage or {}).items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    total[key] = total.get(key, 0) + value
        return total or None


def summarize(records: Iterable[dict[str, Any]]) -> HistorySummary:
    """Fold records into state visits (a state entered again, in a loop, is a new visit). Records
    of subflows and continuations (another ``instance_id``) are ignored; top-level ones kept."""
    # Keyed by sequence number: a record stored twice (it never should be) counts once.
    ordered = sorted({r["seq"]: r for r in records}.values(), key=lambda r: r["seq"])
    summary = HistorySummary()
    if not ordered:
        return summary
    top = ordered[0].get("instance_id")
    open_visits: dict[str, StateVisit] = {}
    for record in ordered:
        event, state = record.get("event"), record.get("state")
        if record.get("instance_id") != top and event not in (WORKFLOW_COMPLETED, WORKFLOW_FAILED):
            continue
        if event == WORKFLOW_STARTED:
            summary.input = record.get("input")
        elif event == WORKFLOW_COMPLETED:
            summary.output, summary.error = record.get("output"), None
        elif event == WORKFLOW_FAILED:
            summary.error = record.get("error")
        elif event == EVENT_PRODUCED:
            summary.produced_events.append({k: record.get(k) for k in ("event_name", "type", "id")})
        elif event == STATE_ENTERED and state is not None:
            visit = StateVisit(state=state, entered_at=record["at"], input=record.get("input"))
            open_visits[state] = visit
            summary.visits.append(visit)
        elif event in (STATE_EXITED, STATE_FAILED) and state in open_visits:
            visit = open_visits.pop(state)
            visit.exited_at = record["at"]
            visit.output = record.get("output")
            visit.error = record.get("error")
            visit.usage = record.get("usage") or visit.usage
        elif event == LLM_CALL and state in open_visits:
            open_visits[state].add_usage(record.get("usage") or {})
    return summary
