"""The small public types of :mod:`xflow_runtime.runtime`: instance handles, the record of a
workflow definition, and the unknown-instance error (re-exported there)."""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from xflow_runtime.errors import XFlowError

if TYPE_CHECKING:
    from xflow_runtime.runtime import Runtime


class UnknownInstance(XFlowError):
    """No instance with this id exists (in this runtime, or in the durable store)."""


@dataclass(frozen=True)
class WorkflowRef:
    """What a durable instance records about its definition: the file it was loaded from, the
    SHA-256 of its text, and the text itself, so a resumed instance replays exactly the definition
    it started with even if the file has changed since."""

    path: str
    sha256: str
    source: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "sha256": self.sha256, "source": self.source}


class InstanceHandle:
    """A started instance. ``result()`` waits for its output (or raises
    :class:`~xflow_runtime.errors.WorkflowFailed`)."""

    def __init__(self, runtime: "Runtime", instance_id: str) -> None:
        self._runtime = runtime
        self.instance_id = instance_id

    async def result(self, timeout: float | None = None) -> Any:
        waiting = self._runtime._result(self.instance_id)
        return await (waiting if timeout is None else asyncio.wait_for(waiting, timeout))

    async def send_event(self, event: Mapping[str, Any]) -> None:
        await self._runtime.send_event(event, instance_id=self.instance_id)

    def __repr__(self) -> str:
        return f"InstanceHandle({self.instance_id!r})"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
