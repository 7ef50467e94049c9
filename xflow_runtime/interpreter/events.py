"""Consuming and producing CloudEvents.

All events for an instance arrive on one port topic, :data:`EVENT_TOPIC`, in delivery order. The
:class:`Inbox` keeps the ones no state has consumed yet, so an event that arrives before the state
that waits for it is not lost. An event matches a definition when its ``type`` equals the
definition's ``type``, its ``source`` equals the definition's ``source`` (when the definition has
one), and every correlation rule holds: a rule with a value needs that exact value; a rule without
one needs the value the instance's first correlated event fixed (CloudEvents extension context
attributes, never payload fields).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import Any, Sequence

from xflow_runtime.engine.port import EnginePort
from xflow_runtime.engine.scopes import cancel_decided, start_named_task
from xflow_runtime.interpreter.concurrency import within
from xflow_runtime.interpreter.failures import Failure
from xflow_runtime.plan.model import EventDef

#: The port topic every CloudEvent for an instance is sent on.
EVENT_TOPIC = "cloudevents"


class Inbox:
    """Undelivered events of one instance (shared with its sync subflows).

    One task, the *pump*, reads the port's event topic for the whole instance and buffers what
    arrives; states wait for a matching event on the buffer (with their own timers). A single
    reader in a scope of its own keeps the instance's engine calls the same in every run, however
    many states wait at once (``engine/scopes.py``). The pump starts at the first wait and stops
    when the instance ends (:meth:`close`)."""

    def __init__(self, port: EnginePort):
        self._port = port
        self._buffer: list[dict[str, Any]] = []
        self._pump: asyncio.Task[None] | None = None
        self._changed: asyncio.Future[None] | None = None

    async def receive(self, definitions: Sequence[EventDef], timeout: float | None,
                      correlation: dict[str, Any]) -> tuple[EventDef, dict[str, Any]] | None:
        """The first buffered or arriving event matching one of ``definitions``, or ``None`` once
        ``timeout`` seconds pass. Binds the instance's correlation values on success."""
        deadline = None if timeout is None else await self._port.now() + timeout
        remaining = timeout
        while True:
            # Nothing is awaited between looking at the buffer and taking the signal to wait on,
            # so an event the pump buffers meanwhile always wakes this waiter.
            found = self._take(definitions, correlation)
            if found is not None:
                return found
            if remaining is not None and remaining <= 0:
                return None
            if self._pump is None:
                self._pump = start_named_task(self._pumping(), "inbox")
            try:
                await within(self._port, remaining, asyncio.shield(self._signal()), "event wait")
            except Failure:
                return None
            if deadline is not None:
                remaining = deadline - await self._port.now()

    async def close(self) -> None:
        """Stop reading events (the instance has ended)."""
        if self._pump is not None:
            await cancel_decided((self._pump,))

    async def abandon(self) -> None:
        """Stop reading events because the run itself is being stopped (not a decision of the
        instance: nothing is recorded)."""
        if self._pump is not None:
            self._pump.cancel()
            await asyncio.gather(self._pump, return_exceptions=True)

    async def _pumping(self) -> None:
        while True:
            message = await self._port.wait_event(EVENT_TOPIC, None)
            if isinstance(message, dict):
                self._buffer.append(message)
            self._notify()

    def _take(self, definitions: Sequence[EventDef],
              correlation: dict[str, Any]) -> tuple[EventDef, dict[str, Any]] | None:
        for index, event in enumerate(self._buffer):
            for definition in definitions:
                if matches(event, definition, correlation):
                    del self._buffer[index]
                    for rule in definition.correlation:
                        correlation.setdefault(rule.attribute, event.get(rule.attribute))
                    return definition, event
        return None

    def _signal(self) -> asyncio.Future[None]:
        if self._changed is None or self._changed.done():
            self._changed = asyncio.get_running_loop().create_future()
        return self._changed

    def _notify(self) -> None:
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)


def matches(event: dict[str, Any], definition: EventDef, correlation: dict[str, Any]) -> bool:
    if event.get("type") != definition.type:
        return False
    if definition.source is not None and event.get("source") != definition.source:
        return False
    for rule in definition.correlation:
        if rule.attribute not in event:
            return False
        value = event[rule.attribute]
        expected = rule.value if rule.value is not None else correlation.get(rule.attribute, value)
        if str(value) != str(expected):
            return False
    return True


def payload(event: dict[str, Any], definition: EventDef) -> Any:
    """What data filters see: the ``data`` (``dataOnly: true``) or the whole envelope."""
    return event.get("data") if definition.data_only else event


async def build_event(port: EnginePort, definition: EventDef, data: Any, attributes: Any,
                      workflow_id: str, correlation: dict[str, Any] | None = None) -> dict[str, Any]:
    """A CloudEvents 1.0 envelope for a produced event (id and time come from the port).

    Correlation attributes of the definition are set from their literal value, else from the value
    the instance has bound (so a reply can be correlated back); ``contextAttributes`` win."""
    event: dict[str, Any] = {
        "specversion": "1.0",
        "id": await port.new_id(),
        "source": definition.source or f"/xflow/{workflow_id}",
        "type": definition.type,
        "time": datetime.fromtimestamp(await port.now(), timezone.utc).isoformat().replace("+00:00", "Z"),
        "datacontenttype": "application/json",
    }
    for rule in definition.correlation:
        value = rule.value if rule.value is not None else (correlation or {}).get(rule.attribute)
        if value is not None:
            event[rule.attribute] = value
    if isinstance(attributes, dict):
        event.update({key: value for key, value in attributes.items() if value is not None})
    event["data"] = data
    return event
