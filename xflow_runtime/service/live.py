"""What is happening now, in this process: history records and reply tokens of running
instances, fanned out to SSE streams and to chat requests waiting for a reply.

The runtime calls :meth:`LiveHub.record` for every history record (replayed ones included, after
a restart) and :meth:`LiveHub.tokens` for reply text as the model produces it. Nothing here is
durable: a stream first replays the durable history, then follows the hub, and drops records
it already sent (by ``seq``). Each subscription is a bounded queue; a reader too slow to keep up
is cut off (its stream ends; it reconnects with ``Last-Event-ID``) instead of growing memory."""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Iterator

from contextlib import contextmanager

TERMINAL_RECORDS = ("workflow_completed", "workflow_failed")
RECENT_RECORDS = 64
QUEUE_LIMIT = 4096
ENDED_KEPT = 1000  # ended instances whose recent records stay in memory


@dataclass
class Item:
    kind: str  # "record" | "delta" | "reply_end" | "status" | "overflow"
    data: dict[str, Any]


class Subscription:
    def __init__(self, tokens: bool = True) -> None:
        self.queue: asyncio.Queue[Item] = asyncio.Queue(QUEUE_LIMIT + 1)
        self.overflowed = False
        self.tokens = tokens  # reads reply tokens (a stream); False: only records (a waiting request)

    def put(self, item: Item) -> None:
        if self.overflowed:
            return
        if self.queue.qsize() >= QUEUE_LIMIT:
            self.overflowed = True
            item = Item("overflow", {})
        self.queue.put_nowait(item)

    async def get(self, timeout: float | None) -> Item | None:
        try:
            return await asyncio.wait_for(self.queue.get(), timeout)
        except asyncio.TimeoutError:
            return None


@dataclass
class _Instance:
    recent: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=RECENT_RECORDS))
    last_event: str | None = None
    max_seq: int = -1
    reply_step: str | None = None
    reply_text: str = ""
    busy: bool = False  # a chat message was accepted and its reply is not out yet
    owner: tuple[str | None, str | None] | None = None  # (tenant, user), once a route has read it
    status_changed: bool = False  # cancelled/resumed here since its latest record


class LiveHub:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._subscribers: dict[str, set[Subscription]] = {}
        self._instances: dict[str, _Instance] = {}
        self._ended: deque[str] = deque(maxlen=ENDED_KEPT)
        #: Sees each record once per process (a record replayed after a restart counts again in the
        #: new process): the metrics feed.
        self.on_new_record: Callable[[str, dict[str, Any]], None] | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._loop_thread = threading.get_ident()

    # --- fed by the runtime ------------------------------------------------------------------
    def record(self, instance_id: str, record: dict[str, Any]) -> None:
        self._on_loop(self._record, instance_id, record)

    def tokens(self, instance_id: str, step: str, delta: str, done: bool) -> None:
        self._on_loop(self._tokens, instance_id, step, delta, done)

    def _on_loop(self, function: Callable[..., None], *args: Any) -> None:
        if self._loop is None or threading.get_ident() == self._loop_thread:
            function(*args)
        else:
            self._loop.call_soon_threadsafe(function, *args)

    def _record(self, instance_id: str, record: dict[str, Any]) -> None:
        state = self._instances.setdefault(instance_id, _Instance())
        seq = int(record.get("seq", -1))
        if seq > state.max_seq:
            state.max_seq = seq
            state.recent.append(record)
            state.last_event = record.get("event")
            state.status_changed = False
            if self.on_new_record is not None:
                self.on_new_record(instance_id, record)
        if record.get("event") in ("agent_reply", *TERMINAL_RECORDS):
            state.busy = False
        self._publish(instance_id, Item("record", record))
        if record.get("event") in TERMINAL_RECORDS:
            # kept a while: the engine marks an instance ended a little after its last record
            if len(self._ended) == self._ended.maxlen:
                self._instances.pop(self._ended[0], None)
            self._ended.append(instance_id)

    def _tokens(self, instance_id: str, step: str, delta: str, done: bool) -> None:
        state = self._instances.setdefault(instance_id, _Instance())
        if done:
            state.reply_step, state.reply_text = None, ""
            self._publish(instance_id, Item("reply_end", {"step": step}))
            return
        if state.reply_step != step:
            state.reply_step, state.reply_text = step, ""
        state.reply_text += delta
        self._publish(instance_id, Item("delta", {"step": step, "text": delta}))

    def status(self, instance_id: str, status: str) -> None:
        """A status change that writes no history record (cancelled, resumed)."""
        state = self._instances.get(instance_id)
        if state is not None:
            state.status_changed = True
        self._publish(instance_id, Item("status", {"status": status}))

    def note_owner(self, instance_id: str, tenant: str | None, user: str | None, *, start: bool = False) -> None:
        """Who owns an instance (it never changes): kept for an instance the hub follows, or one
        this process starts."""
        state = self._instances.setdefault(instance_id, _Instance()) if start else self._instances.get(instance_id)
        if state is not None:
            state.owner = (tenant, user)

    def awaiting_message(self, instance_id: str) -> tuple[str | None, str | None] | None:
        """The owner of an instance whose latest record, seen here, is an agent reply, with no
        status change since: it waits for a chat message, no store read needed. ``None``: ask the
        store (not followed here, owner unknown, or anything else)."""
        state = self._instances.get(instance_id)
        if state is None or state.owner is None or state.status_changed or state.last_event != "agent_reply":
            return None
        return state.owner

    def forget_user(self, tenant: str, user: str) -> None:
        """An erased user: nothing of theirs stays in memory (records, reply text, owner)."""
        for instance_id, state in list(self._instances.items()):
            if state.owner == (tenant, user):
                del self._instances[instance_id]

    def _publish(self, instance_id: str, item: Item) -> None:
        for subscription in self._subscribers.get(instance_id, ()):
            subscription.put(item)

    # --- read by the routes ------------------------------------------------------------------
    def wants_tokens(self, instance_id: str) -> bool:
        """Whether a subscriber of the instance reads reply tokens: the runtime streams an LLM call
        only then (a streamed call costs more CPU; a chat request that waits for the reply record
        does not read tokens). A stream that subscribes during a call gets that call's text in
        its record only."""
        return any(subscription.tokens for subscription in self._subscribers.get(instance_id, ()))

    @contextmanager
    def subscribe(self, instance_id: str, *, tokens: bool = True) -> Iterator[Subscription]:
        subscription = Subscription(tokens)
        self._subscribers.setdefault(instance_id, set()).add(subscription)
        try:
            yield subscription
        finally:
            subscribers = self._subscribers.get(instance_id)
            if subscribers is not None:
                subscribers.discard(subscription)
                if not subscribers:
                    del self._subscribers[instance_id]

    def recent(self, instance_id: str) -> list[dict[str, Any]]:
        state = self._instances.get(instance_id)
        return list(state.recent) if state else []

    def last_event(self, instance_id: str) -> str | None:
        state = self._instances.get(instance_id)
        return state.last_event if state else None

    def latest_events(self, events: Collection[str]) -> dict[str, str]:
        """The instances followed here whose latest record is one of ``events``, with that event."""
        return {i: event for i, state in self._instances.items() if (event := state.last_event) is not None
                and event in events}

    def ended_here(self, event: str) -> list[str]:
        """The instances whose latest record seen here is ``event`` (a terminal one): those the hub
        may show ended before the engine does (at most :data:`ENDED_KEPT`)."""
        return [i for i in self._ended if (state := self._instances.get(i)) is not None and state.last_event == event]

    def max_seq(self, instance_id: str) -> int | None:
        state = self._instances.get(instance_id)
        return None if state is None or state.max_seq < 0 else state.max_seq

    def reply_in_progress(self, instance_id: str) -> tuple[str, str] | None:
        state = self._instances.get(instance_id)
        if state is None or state.reply_step is None:
            return None
        return state.reply_step, state.reply_text

    def claim_turn(self, instance_id: str) -> bool:
        """Take the instance's next turn for one chat message; ``False`` if another holds it.
        No await between the check and the set: one of two concurrent messages wins."""
        state = self._instances.setdefault(instance_id, _Instance())
        if state.busy:
            return False
        state.busy = True
        return True

    def release_turn(self, instance_id: str) -> None:
        state = self._instances.get(instance_id)
        if state is not None:
            state.busy = False

    @property
    def tracked(self) -> int:
        return len(self._instances)
