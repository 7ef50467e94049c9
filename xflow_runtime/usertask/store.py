"""The task store (blocking SQLAlchemy, the chat-memory database): create, read, list, and the
state changes claim / unclaim / complete / delete / time out, each one serialised write
transaction that checks :mod:`.rules` on the row it changes."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Iterable, Mapping

from xflow_runtime.errors import XFlowError
from xflow_runtime.storage.lazy_store import LazyStore
from xflow_runtime.usertask.rules import ACTIVE, Actor, TaskView, may_see, refusal


class TaskError(XFlowError):
    """``kind``: ``not-found``, ``forbidden``, ``conflict`` or ``invalid`` (completion data breaks
    the form schema; ``errors`` lists ``{pointer, detail}``)."""

    def __init__(self, kind: str, message: str, errors: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.errors = errors or []


class TaskStore(LazyStore):
    def create(self, fields: Mapping[str, Any]) -> TaskView:
        """Insert the task unless a task with its id exists (a replayed creation): idempotent."""
        from xflow_runtime.storage.task_models import UserTask

        with self._session() as session:
            row = session.get(UserTask, fields["id"])
            if row is None:
                now = _now()
                row = UserTask(**fields, created_at=now, updated_at=now)
                session.add(row)
                session.flush()
            return _view(row)

    def get(self, task_id: str) -> TaskView | None:
        from sqlalchemy.orm import Session

        from xflow_runtime.storage.task_models import UserTask

        with Session(self.engine) as session:
            row = session.get(UserTask, task_id)
            return None if row is None else _view(row)

    def visible(self, task_id: str, actor: Actor) -> TaskView:
        task = self.get(task_id)
        if task is None or not may_see(task, actor):
            raise TaskError("not-found", f"no task {task_id}")
        return task

    def list(self, actor: Actor, statuses: Iterable[str] = ACTIVE, limit: int = 200) -> list[TaskView]:
        """The tasks ``actor`` may see (its own and its groups'), newest first."""
        from sqlalchemy import select
        from sqlalchemy.orm import Session

        from xflow_runtime.storage.task_models import UserTask

        query = (select(UserTask).where(UserTask.tenant_id == actor.tenant, UserTask.status.in_(list(statuses)))
                 .order_by(UserTask.created_at.desc()))
        with Session(self.engine) as session:
            tasks = [_view(row) for row in session.scalars(query)]
        return [task for task in tasks if may_see(task, actor)][:limit]

    def act(self, task_id: str, actor: Actor, action: str, data: Any = None) -> TaskView:
        """Claim, unclaim, complete (``data`` checked against the form schema) or delete."""
        from xflow_runtime.storage.task_models import UserTask

        with self._session() as session:
            row = session.get(UserTask, task_id, with_for_update=True)  # PostgreSQL: lock the row
            if row is None or not may_see(_view(row), actor):
                raise TaskError("not-found", f"no task {task_id}")
            refused = refusal(_view(row), actor, action)
            if refused is not None:
                raise TaskError(*refused)
            if action == "claim":
                row.status, row.claimed_by = "claimed", actor.user
            elif action == "unclaim":
                row.status, row.claimed_by = "open", None
            elif action == "complete":
                _check_form(row.form_schema, data)
                row.status, row.completed_by, row.completion = "completed", actor.user, data
                row.claimed_by = row.claimed_by or actor.user
            elif action == "delete":
                row.status = "deleted"
            else:
                raise ValueError(f"unknown task action {action!r}")
            row.updated_at = _now()
            session.flush()
            return _view(row)

    def time_out(self, task_id: str) -> TaskView | None:
        """Mark an active task timed out; a task that ended meanwhile is returned as it is."""
        from xflow_runtime.storage.task_models import UserTask

        with self._session() as session:
            row = session.get(UserTask, task_id, with_for_update=True)
            if row is not None and row.status in ACTIVE:
                row.status, row.updated_at = "timedOut", _now()
                session.flush()
            return None if row is None else _view(row)

    def _session(self) -> Any:
        return _WriteSession(self.engine)


class _WriteSession:
    """A session inside one serialised write transaction (committed on success)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    def __enter__(self) -> Any:
        from sqlalchemy.orm import Session

        from xflow_runtime.storage.database import write_transaction

        self._transaction = write_transaction(self.engine)
        connection = self._transaction.__enter__()
        self._session = Session(bind=connection, expire_on_commit=False)
        return self._session

    def __exit__(self, *exc_info: Any) -> None:
        try:
            if exc_info[0] is None:
                self._session.flush()
            self._session.close()
        finally:
            self._transaction.__exit__(*exc_info)


def _check_form(schema: Any, data: Any) -> None:
    if schema is None:
        return
    from jsonschema import validators

    validator = validators.validator_for(schema, default=validators.Draft202012Validator)(schema)
    problems = [{"pointer": "#/data" + "".join(f"/{p}" for p in error.absolute_path), "detail": error.message}
                for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))]
    if problems:
        raise TaskError("invalid", "the data does not match the task's form: "
                        + "; ".join(f"{p['pointer']}: {p['detail']}" for p in problems), problems)


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).isoformat()


def _view(row: Any) -> TaskView:
    return TaskView(id=row.id, tenant=row.tenant_id, instance_id=row.instance_id, workflow_id=row.workflow_id,
                    state=row.state_name, task_key=row.task_key, form_key=row.form_key, assignee=row.assignee,
                    candidate_users=tuple(row.candidate_users or ()), candidate_groups=tuple(row.candidate_groups or ()),
                    due_at=_iso(row.due_at), input=row.input, form_schema=row.form_schema, status=row.status,
                    claimed_by=row.claimed_by, completed_by=row.completed_by, completion=row.completion,
                    created_at=_iso(row.created_at) or "", updated_at=_iso(row.updated_at) or "")
