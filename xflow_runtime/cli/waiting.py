"""What a running instance waits for, and the exact command that delivers it.

The CLI learns where an instance is from its history records (``state_entered``, ``state_exited``,
``agent_reply``) and reads the waiting state in the plan: an event state's events, a switch's
event conditions, a callback's event, an action's result event, a sleep's due time, an agent
conversation's next user message. :class:`WaitWatcher` turns that into a notice on stderr once the
instance has stayed there for :data:`SETTLE_SECONDS` (so states that pass straight through, and
replayed records, print nothing). The pure part (:func:`wait_of`, :func:`notice`) is apart from
the watcher's timer.
"""

from __future__ import annotations

import io
import json
import shlex
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TextIO

from xflow_runtime.cli.output import paint, timestamp

#: how long an instance stays in a waiting state before the notice is printed
SETTLE_SECONDS = 0.3


@dataclass(frozen=True)
class Wait:
    """What an instance waits for in one state."""

    state: str
    kind: str  # "event" | "callback" | "result event" | "timer" | "message"
    events: tuple[Any, ...] = ()  # EventDef
    all_of: bool = False  # an event state with exclusive: false waits for every event
    due: float | None = None  # epoch seconds: the timer's due time, or when the wait times out

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "kind": self.kind, "all_of": self.all_of, "due": timestamp(self.due),
                "events": [_event_fields(e) for e in self.events]}


def wait_of(plan: Any, state_name: str, entered_at: float) -> Wait | None:
    """The wait of ``state_name`` in ``plan`` entered at ``entered_at``, or ``None`` if it does
    not wait for anything from outside."""
    from xflow_runtime.plan.model import EventRef
    from xflow_runtime.plan.states import CallbackState, EventState, SleepState, SwitchState

    state = plan.states.get(state_name) if plan is not None else None
    if state is None:
        return None
    timeout = state.timeouts.event
    due = None if timeout is None else entered_at + timeout
    if isinstance(state, EventState):
        events = tuple(event for on in state.on_events for event in on.events)
        return Wait(state_name, "event", events, all_of=not state.exclusive, due=due)
    if isinstance(state, SwitchState) and state.event_conditions:
        return Wait(state_name, "event", tuple(c.event for c in state.event_conditions), due=due)
    if isinstance(state, CallbackState):
        return Wait(state_name, "callback", (state.event,), due=due)
    if isinstance(state, SleepState):
        return Wait(state_name, "timer", due=entered_at + state.duration)
    results = tuple(a.ref.result for a in getattr(state, "actions", ())
                    if isinstance(a.ref, EventRef) and a.ref.invoke == "sync")
    if results:
        return Wait(state_name, "result event", results, due=due)
    return None


def message_wait(state_name: str) -> Wait:
    return Wait(state_name, "message")


def delivery_commands(wait: Wait, instance_id: str, *, attached: bool, options: Sequence[str] = ()) -> list[str]:
    """The commands that deliver what ``wait`` waits for. ``attached``: this process still runs
    the instance, so the command only delivers (``--no-wait``); otherwise it delivers and then
    runs the instance to its end (or its next wait). ``options``: the run's reproducible options
    (``--db``, ``--secrets-file``…), which resuming needs too."""
    base = ["xflow", "send", instance_id]
    tail = ["--no-wait"] if attached else list(options)
    if wait.kind == "message":
        return [shlex.join([*base, "--message", "TEXT", *tail])]
    if wait.kind == "timer":
        return [] if attached else [shlex.join(["xflow", "resume", instance_id, *options])]
    return [shlex.join([*base, "--event", json.dumps(_cloud_event(event), separators=(",", ":")), *tail])
            for event in wait.events]


def notice(wait: Wait, instance_id: str | None, *, attached: bool, options: Sequence[str] = (),
           stream: TextIO | None = None) -> list[str]:
    """The lines that tell a user what the instance waits for and how to deliver it."""
    paint_to = stream or io.StringIO()  # not a terminal: no colour
    head = paint(f"waiting in state {wait.state}", "yellow", paint_to)
    lines = [f"{head}: {_what(wait)}"]
    if wait.due is not None and wait.kind != "timer":
        lines.append(f"  gives up at {timestamp(wait.due)} (eventTimeout)")
    if instance_id is None:
        lines.append("  this run is --ephemeral: nothing outside this process can reach it; pass events "
                     "with --event, or run without --ephemeral to deliver them later")
        return lines
    commands = delivery_commands(wait, instance_id, attached=attached, options=options)
    if commands:
        verb = "deliver it from another shell with" if attached else "deliver it and continue with"
        if wait.kind == "timer":
            verb = "continue it after the due time with"
        lines.append(f"  {verb}:" if len(commands) == 1 else f"  {verb} (one per event):")
        lines.extend(f"    {paint(command, 'bold', paint_to)}" for command in commands)
    return lines


def _what(wait: Wait) -> str:
    if wait.kind == "timer":
        return f"a timer, due at {timestamp(wait.due)}"
    if wait.kind == "message":
        return "the next user message of the agent conversation"
    described = [_describe_event(event) for event in wait.events]
    joined = (" and " if wait.all_of else " or ").join(described)
    label = {"callback": "a callback event", "result event": "the result event"}.get(wait.kind, "an event")
    if len(described) > 1:
        label = "every one of these events" if wait.all_of else "one of these events"
    return f"{label}: {joined}"


def _describe_event(event: Any) -> str:
    parts = [f"type={event.type}"]
    if event.source:
        parts.append(f"source={event.source}")
    for rule in event.correlation:
        parts.append(f"{rule.attribute}={rule.value if rule.value is not None else '<correlation value>'}")
    return " ".join(parts)


def _cloud_event(event: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"type": event.type}
    if event.source:
        fields["source"] = event.source
    for rule in event.correlation:
        fields[rule.attribute] = rule.value if rule.value is not None else f"<{rule.attribute}>"
    fields["data"] = {}
    return fields


def _event_fields(event: Any) -> dict[str, Any]:
    fields = {"name": event.name, "type": event.type, "source": event.source}
    if event.correlation:
        fields["correlation"] = {rule.attribute: rule.value for rule in event.correlation}
    return fields


@dataclass
class WaitWatcher:
    """A history listener: when the top-level instance settles in a waiting state, prints the
    notice on ``stream`` and calls ``on_wait`` (from a timer thread). ``current`` is the wait the
    instance is in now (``None`` while it moves)."""

    plan: Any
    stream: TextIO
    attached: bool = True
    ephemeral: bool = False
    options: Sequence[str] = ()
    quiet: bool = False
    on_wait: Callable[[Wait], None] | None = None
    instance_id: str | None = None
    current: Wait | None = None
    _timer: threading.Timer | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, record: dict[str, Any]) -> None:
        record_instance = record.get("instance_id")
        if self.instance_id is None and record_instance:
            self.instance_id = record_instance
        if record_instance and record_instance != self.instance_id:
            return  # a subflow's own records
        event, state = record.get("event"), record.get("state")
        if event == "state_entered" and state:
            self._arm(wait_of(self.plan, state, record.get("at") or time.time()))
        elif event == "agent_reply" and state:
            self._arm(message_wait(state))
        elif event in ("state_exited", "state_failed", "workflow_completed", "workflow_failed"):
            self._arm(None)

    def _arm(self, wait: Wait | None) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer, self.current = None, None
            if wait is not None:
                self._timer = threading.Timer(SETTLE_SECONDS, self._settled, (wait,))
                self._timer.daemon = True
                self._timer.start()

    def _settled(self, wait: Wait) -> None:
        with self._lock:
            self.current = wait
        if not self.quiet:
            instance = None if self.ephemeral else self.instance_id
            for line in notice(wait, instance, attached=self.attached, options=self.options, stream=self.stream):
                print(line, file=self.stream, flush=True)
        if self.on_wait is not None:
            self.on_wait(wait)

    def stop(self) -> None:
        self._arm(None)
