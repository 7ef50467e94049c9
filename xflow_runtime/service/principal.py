"""Who is calling: the (tenant, user, role) a credential resolves to. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Role = Literal["service", "user"]
ROLES: tuple[Role, ...] = ("service", "user")


@dataclass(frozen=True)
class Principal:
    """``service``: manages every instance of its tenant (``user`` is who it acts as, if any).
    ``user``: an end user; reaches only the instances it started."""

    tenant: str
    user: str | None
    role: Role

    def may_see(self, tenant: str | None, user: str | None) -> bool:
        """Whether a resource owned by (tenant, user) is visible. Everything else answers 404."""
        if tenant != self.tenant:
            return False
        return self.role == "service" or (user is not None and user == self.user)
