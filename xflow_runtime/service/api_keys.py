"""API keys in our database: created and revoked with ``xflow keys``, checked on every request.

A key reads ``xfk_<id>_<secret>``; only SHA-256(secret) is stored and compared in constant
time. Verified keys are cached for ``cache_seconds`` (default 5 s): a revoked or expired key is
refused at most that long after revocation (specs/service.md, "Auth")."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from xflow_runtime.errors import XFlowError
from xflow_runtime.service.principal import ROLES, Principal

PREFIX = "xfk_"


@dataclass(frozen=True)
class KeyInfo:
    id: str
    tenant: str
    user: str | None
    role: str
    name: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "tenant": self.tenant, "user": self.user, "role": self.role, "name": self.name,
                "created_at": _iso(self.created_at), "expires_at": _iso(self.expires_at),
                "revoked_at": _iso(self.revoked_at)}


def _iso(value: datetime | None) -> str | None:
    return None if value is None else _aware(value).isoformat()


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class ApiKeyStore:
    """Blocking (SQLAlchemy); the service calls :meth:`verify` through :class:`ApiKeyVerifier`."""

    def __init__(self, url: str) -> None:
        from xflow_runtime.storage.database import open_database

        self.engine = open_database(url)

    def close(self) -> None:
        self.engine.dispose()

    def create(self, tenant: str, *, user: str | None = None, role: str = "service", name: str = "",
               expires_in: timedelta | None = None) -> tuple[str, KeyInfo]:
        """A new key: (the key to hand out, shown only now; its record)."""
        from sqlalchemy.orm import Session

        from xflow_runtime.storage.service_models import ApiKey

        if role not in ROLES:
            raise XFlowError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        if role == "user" and not user:
            raise XFlowError("a key with role 'user' needs a user")
        if not tenant:
            raise XFlowError("a key needs a tenant")
        key_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        now = datetime.now(timezone.utc)
        row = ApiKey(id=key_id, tenant_id=tenant, user_id=user or None, role=role, name=name or key_id,
                     secret_sha256=_digest(secret), created_at=now,
                     expires_at=None if expires_in is None else now + expires_in)
        info = _info(row)
        with Session(self.engine) as session, session.begin():
            session.add(row)
        return f"{PREFIX}{key_id}_{secret}", info

    def list(self, tenant: str | None = None) -> list[KeyInfo]:
        from sqlalchemy import select
        from sqlalchemy.orm import Session

        from xflow_runtime.storage.service_models import ApiKey

        query = select(ApiKey).order_by(ApiKey.created_at)
        if tenant is not None:
            query = query.where(ApiKey.tenant_id == tenant)
        with Session(self.engine) as session:
            return [_info(row) for row in session.scalars(query)]

    def revoke(self, key_id: str) -> bool:
        from sqlalchemy import update
        from sqlalchemy.orm import Session

        from xflow_runtime.storage.service_models import ApiKey

        with Session(self.engine) as session, session.begin():
            result = session.execute(update(ApiKey).where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
                                     .values(revoked_at=datetime.now(timezone.utc)))
        return bool(getattr(result, "rowcount", 0))

    def verify(self, key: str) -> tuple[Principal, datetime | None] | None:
        """The principal of a valid key and when it expires; ``None`` for anything else."""
        from sqlalchemy.orm import Session

        from xflow_runtime.storage.service_models import ApiKey

        if not key.startswith(PREFIX) or key.count("_") < 2:
            return None
        key_id, secret = key[len(PREFIX):].split("_", 1)
        if len(key_id) != 16:
            return None
        with Session(self.engine, expire_on_commit=False) as session:
            row = session.get(ApiKey, key_id)
        if row is None or not hmac.compare_digest(_digest(secret), row.secret_sha256):
            return None
        if row.revoked_at is not None:
            return None
        expires = None if row.expires_at is None else _aware(row.expires_at)
        if expires is not None and expires <= datetime.now(timezone.utc):
            return None
        return Principal(row.tenant_id, row.user_id, row.role), expires  # type: ignore[arg-type]


def _info(row: Any) -> KeyInfo:
    return KeyInfo(row.id, row.tenant_id, row.user_id, row.role, row.name, row.created_at, row.expires_at,
                   row.revoked_at)


class ApiKeyVerifier:
    """Async, cached front of :class:`ApiKeyStore.verify` (only valid keys are cached)."""

    def __init__(self, store: ApiKeyStore, *, cache_seconds: float = 5.0) -> None:
        self.store = store
        self.cache_seconds = cache_seconds
        self._cache: dict[str, tuple[float, Principal, datetime | None]] = {}

    async def verify(self, key: str) -> Principal | None:
        digest = _digest(key)
        cached = self._cache.get(digest)
        now = time.monotonic()
        if cached is not None and cached[0] > now:
            expires = cached[2]
            if expires is None or expires > datetime.now(timezone.utc):
                return cached[1]
        found = await asyncio.to_thread(self.store.verify, key)
        if found is None:
            self._cache.pop(digest, None)
            return None
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[digest] = (now + self.cache_seconds, found[0], found[1])
        return found[0]
