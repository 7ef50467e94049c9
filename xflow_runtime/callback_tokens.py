"""Signed, per-request callback tokens: how an outside party that the runtime asked for something
(an ``aiagentproxy`` agent; A2A push notifications may reuse it) proves that its callback answers
*that* request of *that* instance, without holding a credential of the service.

A token is ``v1.<claims>.<mac>`` (both base64url, no padding): the claims are the JSON object
``{"p": purpose, "i": instance id, "r": request id, "e": expiry (Unix seconds)}`` and the MAC is
HMAC-SHA256 over ``v1.<claims>`` with a key derived per purpose from the service secret, so a
token made for one purpose is never valid for another. Verification checks the MAC in constant
time, then the purpose, then the expiry; the caller then checks that the instance and request the
token names are the ones the callback is about. Nothing here touches a database or the network.

Several secrets may be given: the first signs, all verify (rotation: add the new one first, drop
the old one after the longest wait it covered). Secrets are bytes of at least 32.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Iterable

VERSION = "v1"
MIN_SECRET_BYTES = 32
_MAX_TOKEN_CHARS = 2048


class InvalidCallbackToken(ValueError):
    """``reason``: ``malformed``, ``signature`` (forged or another service's), ``purpose`` or
    ``expired``. The message never repeats the token."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class CallbackClaims:
    purpose: str
    instance_id: str
    request_id: str
    expires_at: int  # Unix seconds


class CallbackSigner:
    def __init__(self, secrets: bytes | str | Iterable[bytes | str]) -> None:
        if isinstance(secrets, (bytes, str)):
            secrets = [secrets]
        keys = [s.encode() if isinstance(s, str) else bytes(s) for s in secrets]
        if not keys:
            raise ValueError("a callback signer needs at least one secret")
        if any(len(k) < MIN_SECRET_BYTES for k in keys):
            raise ValueError(f"callback secrets must be at least {MIN_SECRET_BYTES} bytes")
        self._secrets = tuple(keys)

    def sign(self, purpose: str, instance_id: str, request_id: str, expires_at: float) -> str:
        claims = {"p": purpose, "i": instance_id, "r": request_id, "e": int(expires_at)}
        body = _b64(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
        signed = f"{VERSION}.{body}"
        return f"{signed}.{_b64(_mac(self._secrets[0], purpose, signed))}"

    def verify(self, token: str, purpose: str, *, now: float | None = None) -> CallbackClaims:
        """The token's claims, or :class:`InvalidCallbackToken`."""
        if not isinstance(token, str) or not 0 < len(token) <= _MAX_TOKEN_CHARS or token.count(".") != 2:
            raise InvalidCallbackToken("malformed", "the callback token is malformed")
        version, body, mac = token.split(".")
        if version != VERSION:
            raise InvalidCallbackToken("malformed", "the callback token is malformed")
        try:
            given = _unb64(mac)
            claims = json.loads(_unb64(body))
        except ValueError:
            raise InvalidCallbackToken("malformed", "the callback token is malformed") from None
        if not isinstance(claims, dict) or not isinstance(claims.get("p"), str):
            raise InvalidCallbackToken("malformed", "the callback token is malformed")
        # The MAC is keyed by the purpose the token claims; checked before anything is believed.
        if not any(hmac.compare_digest(given, _mac(secret, claims["p"], f"{version}.{body}"))
                   for secret in self._secrets):
            raise InvalidCallbackToken("signature", "the callback token is not valid")
        if claims["p"] != purpose:
            raise InvalidCallbackToken("purpose", "the callback token is for something else")
        instance_id, request_id, expires_at = claims.get("i"), claims.get("r"), claims.get("e")
        if not (isinstance(instance_id, str) and isinstance(request_id, str) and isinstance(expires_at, int)):
            raise InvalidCallbackToken("malformed", "the callback token is malformed")
        if (time.time() if now is None else now) >= expires_at:
            raise InvalidCallbackToken("expired", "the callback token has expired")
        return CallbackClaims(purpose, instance_id, request_id, expires_at)


def _mac(secret: bytes, purpose: str, signed: str) -> bytes:
    key = hmac.new(secret, f"xflow-callback-key/{purpose}".encode(), hashlib.sha256).digest()
    return hmac.new(key, signed.encode(), hashlib.sha256).digest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    if not text or any(c not in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" for c in text):
        raise ValueError("not base64url")
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64(raw) != text:  # one encoding per token: unused trailing bits must be zero
        raise ValueError("not canonical base64url")
    return raw
