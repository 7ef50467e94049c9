"""Server-Sent Events of one instance: durable history records (``event: record``, ``id: <seq>``),
reply tokens as the model produces them (``reply.delta``, ``reply.end``, and after a reconnect
during a reply one ``reply.snapshot``; these carry no ``id`` so the client's Last-Event-ID stays
on the last durable record), ``status`` changes without a record (cancel, resume), ``end``.

Every ``data`` is one line of ASCII JSON (CR, LF, U+2028 and NUL are escaped). A comment goes
out at once and every ``heartbeat`` seconds of silence. Resumption: records with ``seq`` greater
than the cursor are replayed from the durable history plus the hub's recent records, then the
live feed follows; a record already sent is never sent again."""

from __future__ import annotations

import json
import re
from typing import Any, AsyncIterator

from xflow_runtime.service.live import TERMINAL_RECORDS, Item, Subscription
from xflow_runtime.service.problems import Problem
from xflow_runtime.service.state import ServiceState
from xflow_runtime.service.views import TERMINAL, status_of

HEADERS = {"Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"}
_CURSOR = re.compile(r"^(?:-1|0|[1-9][0-9]{0,17})$")


def frame(event: str, data: Any, event_id: int | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, separators=(',', ':'), default=str)}\n\n".encode()


def parse_cursor(header: str | None, query: str | None) -> int:
    """The Last-Event-ID header wins over the ``last_event_id`` query parameter."""
    value = header if header is not None else query
    if value is None or value == "":
        return -1
    if not _CURSOR.match(value.strip()):
        raise Problem("invalid-cursor", "Last-Event-ID must be the integer id of a record")
    return int(value)


def item_frame(item: Item) -> bytes:
    if item.kind == "delta":
        return frame("reply.delta", item.data)
    if item.kind == "reply_end":
        return frame("reply.end", item.data)
    return frame("status", item.data)


async def instance_stream(state: ServiceState, instance_id: str, subscription: Subscription, after: int,
                          *, snapshot: bool = True) -> AsyncIterator[bytes]:
    """The frames of one instance from ``after`` on (the caller holds the subscription)."""
    yield b"retry: 3000\n: xflow stream\n\n"
    stored = {r["seq"]: r for r in await state.runtime.history(instance_id)}
    stored.update({r["seq"]: r for r in state.hub.recent(instance_id)})
    last = after
    for seq in sorted(stored):
        if seq > last:
            last = seq
            yield frame("record", stored[seq], seq)
            if stored[seq].get("event") in TERMINAL_RECORDS:
                yield frame("end", {"seq": seq})
                return
    progress = state.hub.reply_in_progress(instance_id) if snapshot else None
    if progress is not None:
        yield frame("reply.snapshot", {"step": progress[0], "text": progress[1]})
    if await _ended(state, instance_id):
        yield frame("end", {"seq": last})
        return
    while True:
        item = await subscription.get(state.options.heartbeat_seconds)
        if item is None:
            yield b": ping\n\n"
            if await _ended(state, instance_id):
                yield frame("end", {"seq": last})
                return
            continue
        if item.kind == "overflow":
            yield frame("error", {"type": "urn:xflow:problem:stream-overflow",
                                  "detail": "the reader fell behind; reconnect with Last-Event-ID"})
            return
        if item.kind == "record":
            seq = item.data.get("seq", -1)
            if seq <= last:
                continue
            last = seq
            yield frame("record", item.data, seq)
            if item.data.get("event") in TERMINAL_RECORDS:
                yield frame("end", {"seq": seq})
                return
            continue
        yield item_frame(item)
        if item.kind == "status" and item.data.get("status") in TERMINAL:
            yield frame("end", {"seq": last})
            return


async def _ended(state: ServiceState, instance_id: str) -> bool:
    row = await state.runtime.status_row(instance_id)
    return row is None or status_of(row, None) in TERMINAL
