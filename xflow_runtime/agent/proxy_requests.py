"""The requests of asynchronous ``aiagentproxy`` states (blocking SQLAlchemy, the chat-memory
database): created before the agent is called, answered once by a callback, timed out by the
instance. Each change is one serialised write transaction on the row (specs/states-human.md §7)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping

from xflow_runtime.storage.lazy_store import LazyStore

WAITING, ANSWERED, TIMED_OUT = "waiting", "answered", "timedOut"


@dataclass(frozen=True)
class ProxyRequest:
    id: str
    instance_id: str
    status: str
    answer: Any
    expires_at: float  # Unix seconds

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "instanceId": self.instance_id, "status": self.status, "answer": self.answer,
                "expiresAt": self.expires_at}


class RequestRefused(Exception):
    """``kind``: ``not-found`` (no such request of that instance), ``conflict`` (answered
    already, with another answer) or ``gone`` (timed out, or past its deadline)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class ProxyRequestStore(LazyStore):
    def create(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        """Insert the request (``status`` waiting) unless it exists (a replayed creation)."""
        from xflow_runtime.storage.proxy_models import AgentProxyRequest

        with self._session() as session:
            row = session.get(AgentProxyRequest, fields["id"])
            if row is None:
                now = _now()
                row = AgentProxyRequest(**{**fields, "expires_at": _at(fields["expires_at"])}, status=WAITING,
                                        created_at=now, updated_at=now)
                session.add(row)
                session.flush()
            return _view(row).to_dict()

    def get(self, request_id: str) -> dict[str, Any] | None:
        from sqlalchemy.orm import Session

        from xflow_runtime.storage.proxy_models import AgentProxyRequest

        with Session(self.engine) as session:
            row = session.get(AgentProxyRequest, request_id)
            return None if row is None else _view(row).to_dict()

    def answer(self, request_id: str, instance_id: str, answer: Any, *, now: float | None = None) -> tuple[ProxyRequest, bool]:
        """Record the answer; ``(request, duplicate)``: ``duplicate`` when this very answer was
        recorded before (a repeated callback changes nothing). Else :class:`RequestRefused`."""
        from xflow_runtime.storage.proxy_models import AgentProxyRequest

        moment = datetime.now(timezone.utc) if now is None else datetime.fromtimestamp(now, timezone.utc)
        with self._session() as session:
            row = session.get(AgentProxyRequest, request_id, with_for_update=True)
            if row is None or row.instance_id != instance_id:
                raise RequestRefused("not-found", f"no request {request_id}")
            if row.status == ANSWERED:
                if row.answer == answer:
                    return _view(row), True
                raise RequestRefused("conflict", f"request {request_id} was answered already")
            if row.status == TIMED_OUT or moment >= _aware(row.expires_at):
                raise RequestRefused("gone", f"request {request_id} is no longer waited for (it timed out)")
            row.status, row.answer, row.updated_at = ANSWERED, answer, _now()
            session.flush()
            return _view(row), False

    def close_answered(self, request_id: str, answer: Any) -> None:
        """The agent answered synchronously: the request is answered (later callbacks are refused)."""
        from xflow_runtime.storage.proxy_models import AgentProxyRequest

        with self._session() as session:
            row = session.get(AgentProxyRequest, request_id, with_for_update=True)
            if row is not None and row.status == WAITING:
                row.status, row.answer, row.updated_at = ANSWERED, answer, _now()

    def time_out(self, request_id: str) -> dict[str, Any] | None:
        """Mark a waiting request timed out; one answered meanwhile is returned as it is."""
        from xflow_runtime.storage.proxy_models import AgentProxyRequest

        with self._session() as session:
            row = session.get(AgentProxyRequest, request_id, with_for_update=True)
            if row is not None and row.status == WAITING:
                row.status, row.updated_at = TIMED_OUT, _now()
                session.flush()
            return None if row is None else _view(row).to_dict()

    def _session(self) -> Any:
        from xflow_runtime.usertask.store import _WriteSession  # noqa: PLC2701 - one write-session rule

        return _WriteSession(self.engine)


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, timezone.utc)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _view(row: Any) -> ProxyRequest:
    return ProxyRequest(id=row.id, instance_id=row.instance_id, status=row.status, answer=row.answer,
                        expires_at=_aware(row.expires_at).timestamp())
