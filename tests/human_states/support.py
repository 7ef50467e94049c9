"""The human-state tests use the service tests' real ``xflow serve`` process (JWT auth) and add
a caller's ``groups`` claim and a polling helper."""

from __future__ import annotations

import time
from typing import Any

from tests.service.support import ROOT, ServiceProcess, bearer, jwt_token

__all__ = ["ROOT", "ServiceProcess", "eventually", "token"]


def token(user: str, *, tenant: str = "a", role: str = "user", groups: list[str] | None = None) -> dict[str, str]:
    claims: dict[str, Any] = {} if groups is None else {"groups": groups}
    return bearer(jwt_token(tenant, user, role=role, expires_in=3600, **claims))


def eventually(check: Any, timeout: float = 30.0, every: float = 0.2) -> Any:
    """The first truthy result of ``check()`` within ``timeout`` seconds (else AssertionError)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout} s: {check}")
        time.sleep(every)
