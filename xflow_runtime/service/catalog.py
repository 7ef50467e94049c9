"""The workflow definitions a service offers: every ``*.yaml``/``*.yml``/``*.json`` file of one
folder, compiled by the runtime. A file that changes on disk is compiled again on the next
request that looks (at most every ``min_interval`` seconds) and becomes a new revision of its
workflow; a file that fails to compile keeps serving its last good revision and reports the
error in ``GET /v1/workflows``. Running instances are unaffected: each recorded the text of the
definition it started with (``specs/python-api.md``). Every definition is also registered with
the runtime, so ``subFlowRef`` and agent ``collaborators`` can name the folder's workflows (the
newest revision replaces the previous one)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xflow_runtime.errors import XFlowError
from xflow_runtime.plan.states import EventState

if TYPE_CHECKING:
    from xflow_runtime.plan.states import WorkflowPlan
    from xflow_runtime.runtime import Runtime

SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Definition:
    workflow_id: str
    version: str | None
    name: str | None
    file: str
    sha256: str
    revision: int
    plan: "WorkflowPlan"

    @property
    def input_schema(self) -> dict[str, Any] | None:
        schema = self.plan.data_input_schema
        return None if schema is None else schema.schema

    def start_event_types(self) -> list[tuple[str, str | None]]:
        """(type, source) of the events that start this workflow (its start state is an event state)."""
        start = self.plan.start_state
        if not isinstance(start, EventState):
            return []
        return [(event.type, event.source) for on in start.on_events for event in on.events]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.workflow_id, "version": self.version, "name": self.name, "revision": self.revision,
                "sha256": self.sha256, "file": Path(self.file).name, "input_schema": self.input_schema,
                "start_events": [{"type": t, "source": s} for t, s in self.start_event_types()]}


@dataclass
class _FileState:
    stamp: tuple[int, int]
    workflow_id: str | None
    error: str | None


class WorkflowCatalog:
    def __init__(self, runtime: "Runtime", directory: str | Path, *, min_interval: float = 0.5) -> None:
        self.runtime = runtime
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise XFlowError(f"--workflows {directory}: not a directory")
        self.min_interval = min_interval
        self._files: dict[Path, _FileState] = {}
        self._definitions: dict[str, Definition] = {}
        self._revisions: dict[str, int] = {}
        self._checked = 0.0

    def refresh(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._checked < self.min_interval:
            return
        self._checked = now
        present = {p for p in self.directory.iterdir() if p.suffix in SUFFIXES and p.is_file()}
        for gone in set(self._files) - present:
            state = self._files.pop(gone)
            if state.workflow_id and self._definitions.get(state.workflow_id, None) is not None \
                    and self._definitions[state.workflow_id].file == str(gone.resolve()):
                del self._definitions[state.workflow_id]
        for path in sorted(present):
            try:
                stat = path.stat()
            except OSError:
                continue
            stamp = (stat.st_mtime_ns, stat.st_size)
            known = self._files.get(path)
            if known is not None and known.stamp == stamp:
                continue
            self._files[path] = self._load(path, stamp, known)

    def _load(self, path: Path, stamp: tuple[int, int], known: _FileState | None) -> _FileState:
        previous_id = known.workflow_id if known else None
        try:
            plan = self.runtime.load(path)
        except XFlowError as error:
            return _FileState(stamp, previous_id, str(error).splitlines()[0][:500])
        ref = self.runtime.source_of(plan)
        current = self._definitions.get(plan.workflow_id)
        if current is not None and current.sha256 == ref.sha256:
            return _FileState(stamp, plan.workflow_id, None)
        revision = self._revisions.get(plan.workflow_id, 0) + 1
        self._revisions[plan.workflow_id] = revision
        self._definitions[plan.workflow_id] = Definition(plan.workflow_id, plan.version, plan.name, ref.path,
                                                         ref.sha256, revision, plan)
        self.runtime.register(plan)  # subFlowRef (and agent collaborators) name the folder's workflows
        return _FileState(stamp, plan.workflow_id, None)

    def definitions(self) -> list[Definition]:
        self.refresh()
        return sorted(self._definitions.values(), key=lambda d: d.workflow_id)

    def errors(self) -> list[dict[str, str]]:
        return [{"file": p.name, "detail": s.error} for p, s in sorted(self._files.items()) if s.error]

    def get(self, workflow_id: str) -> Definition | None:
        self.refresh()
        return self._definitions.get(workflow_id)

    def started_by(self, event_type: str, source: str | None) -> list[Definition]:
        """Definitions whose start state waits for an event of this type (and source, when set)."""
        self.refresh()
        return [d for d in self._definitions.values()
                if any(t == event_type and (s is None or s == source) for t, s in d.start_event_types())]
