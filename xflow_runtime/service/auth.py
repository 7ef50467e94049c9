"""Authentication: a request's credential → :class:`Principal`. Tenant and user come from the
credential only, never from a path, query or body.

- API keys (``Authorization: Bearer xfk_…`` or ``X-API-Key``), see :mod:`.api_keys`.
- JWTs (``Authorization: Bearer <jwt>``) verified with PyJWT: HS256 with a shared secret (≥ 32
  bytes), or RS256 with a PEM public key, a JWKS file or a JWKS URL (key chosen by ``kid``; the
  URL's key set is cached for ``jwks_lifespan_seconds``, and an unknown ``kid`` refetches it at
  most once per ``jwks_cooldown_seconds``, so forged kids cannot hammer the identity provider). The algorithm is
  pinned by the key, never taken from the token; ``exp`` is required; ``iss``/``aud`` are checked
  when configured. Claims: ``tenant`` (``tenant_claim``), ``sub`` (the user), ``role``
  (``service`` or ``user``, default ``user``).
- ``none``: every request is the ``service`` principal of tenant ``default`` (loopback only; the
  CLI refuses other hosts and warns).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.requests import Request

from xflow_runtime.errors import XFlowError
from xflow_runtime.service.api_keys import PREFIX, ApiKeyVerifier
from xflow_runtime.service.principal import ROLES, Principal
from xflow_runtime.service.problems import Problem

ANONYMOUS = Principal("default", None, "service")


@dataclass
class JwtSettings:
    secret: str | None = None          # HS256
    public_key: str | None = None      # RS256, PEM text
    jwks_file: str | None = None       # RS256, a JWKS document on disk
    jwks_url: str | None = None        # RS256, a JWKS document served by the identity provider
    jwks_lifespan_seconds: float = 300.0
    jwks_cooldown_seconds: float = 30.0
    issuer: str | None = None
    audience: str | None = None
    tenant_claim: str = "tenant"
    leeway_seconds: int = 30
    _jwks: dict[str, Any] = field(default_factory=dict, repr=False)
    _jwks_client: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.secret, self.public_key, self.jwks_file, self.jwks_url)) != 1:
            raise XFlowError("JWT auth needs exactly one of: an HS256 secret, an RS256 public key, a JWKS file, "
                             "a JWKS URL")
        if self.secret is not None and len(self.secret.encode()) < 32:
            raise XFlowError("an HS256 secret must be at least 32 bytes")
        if self.jwks_file is not None:
            self._jwks = _read_jwks(Path(self.jwks_file))
        if self.jwks_url is not None:
            self._jwks_client = _jwks_client(self.jwks_url, self.jwks_lifespan_seconds, self.jwks_cooldown_seconds)

    async def key_for(self, token: str) -> tuple[Any, list[str]]:
        import jwt

        if self.secret is not None:
            return self.secret, ["HS256"]
        if self.public_key is not None:
            return self.public_key, ["RS256"]
        if self._jwks_client is not None:
            try:  # PyJWKClient fetches with urllib: off the event loop
                found = await asyncio.to_thread(self._jwks_client.get_signing_key_from_jwt, token)
            except jwt.PyJWKClientConnectionError:
                raise Problem("not-ready", "the identity provider's key set cannot be fetched",
                              headers={"Retry-After": "5"}) from None
            if found.key_type != "RSA":
                raise jwt.InvalidTokenError("the key is not an RSA key")
            return found.key, ["RS256"]
        kid = jwt.get_unverified_header(token).get("kid")
        key = self._jwks.get(kid) if isinstance(kid, str) else None
        if key is None:
            raise jwt.InvalidTokenError("unknown kid")
        return key, ["RS256"]


def _read_jwks(path: Path) -> dict[str, Any]:
    import jwt

    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        keys = {}
        for entry in document.get("keys", []):
            if entry.get("kty") == "RSA" and isinstance(entry.get("kid"), str):
                keys[entry["kid"]] = jwt.PyJWK(entry, algorithm="RS256").key
    except (OSError, ValueError, AttributeError, jwt.PyJWTError) as error:
        raise XFlowError(f"cannot read the JWKS file {path}: {error}") from None
    if not keys:
        raise XFlowError(f"the JWKS file {path} has no RSA key with a kid")
    return keys


def _jwks_client(url: str, lifespan: float, cooldown: float) -> Any:
    """A cached key-set client; plain HTTP only to a loopback host (a key set fetched in the clear
    lets anyone on the path mint tokens)."""
    import ipaddress
    from urllib.parse import urlsplit

    import jwt

    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback):
        raise XFlowError(f"the JWKS URL must be https:// (http:// only on a loopback host): {url}")
    return jwt.PyJWKClient(url, cache_jwk_set=True, lifespan=lifespan, cooldown_duration=cooldown, timeout=5)


def _unauthenticated(detail: str, *, presented: bool) -> Problem:
    challenge = 'Bearer realm="xflow"' + (', error="invalid_token"' if presented else "")
    return Problem("unauthenticated", detail, headers={"WWW-Authenticate": challenge})


class Authenticator:
    def __init__(self, *, keys: ApiKeyVerifier | None = None, jwt_settings: JwtSettings | None = None,
                 anonymous: bool = False) -> None:
        if anonymous and (keys or jwt_settings):
            raise XFlowError("auth 'none' cannot be combined with keys or JWTs")
        if not anonymous and not (keys or jwt_settings):
            raise XFlowError("configure API keys, JWTs, or auth 'none'")
        self.keys = keys
        self.jwt = jwt_settings
        self.anonymous = anonymous

    async def authenticate(self, request: Request) -> Principal:
        if self.anonymous:
            return ANONYMOUS
        credential = _credential(request)
        if credential is None:
            raise _unauthenticated("send Authorization: Bearer <API key or JWT>", presented=False)
        if credential.startswith(PREFIX) and self.keys is not None:
            principal = await self.keys.verify(credential)
            if principal is None:
                raise _unauthenticated("the API key is unknown, revoked or expired", presented=True)
            return principal
        if self.jwt is not None and credential.count(".") == 2:
            return await self._from_jwt(credential)
        raise _unauthenticated("the credential is not valid", presented=True)

    async def _from_jwt(self, token: str) -> Principal:
        import jwt

        settings = self.jwt
        assert settings is not None
        try:
            key, algorithms = await settings.key_for(token)
            claims = jwt.decode(token, key, algorithms=algorithms, issuer=settings.issuer,
                                audience=settings.audience, leeway=settings.leeway_seconds,
                                options={"require": ["exp", "sub"], "verify_aud": settings.audience is not None})
        except jwt.PyJWTError as error:
            raise _unauthenticated(f"the token is not valid ({type(error).__name__})", presented=True) from None
        tenant = claims.get(settings.tenant_claim)
        role = claims.get("role", "user")
        if not isinstance(tenant, str) or not tenant or role not in ROLES or not isinstance(claims["sub"], str):
            raise _unauthenticated(f"the token needs a string '{settings.tenant_claim}' claim and a role in "
                                   f"{', '.join(ROLES)}", presented=True)
        return Principal(tenant, claims["sub"], role)


def _credential(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if header:
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
        raise _unauthenticated("the Authorization header must be 'Bearer <credential>'", presented=True)
    key = request.headers.get("x-api-key")
    return key.strip() if key else None


async def current_principal(request: Request) -> Principal:
    """The FastAPI dependency every ``/v1`` route uses."""
    state = request.app.state.xflow
    await state.open()
    principal = await state.auth.authenticate(request)
    request.scope["xflow.principal"] = principal
    return principal
