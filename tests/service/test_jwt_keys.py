"""RS256 JWTs with a PEM public key or a JWKS file (the server-process tests use HS256): the key
is chosen by ``kid``, the algorithm is pinned by the key (an HS256 token signed with the public
key's text is refused), unknown kids are refused."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

jwt = pytest.importorskip("jwt")

from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: E402
from starlette.requests import Request  # noqa: E402

from tests.support.json_server import JsonServer  # noqa: E402
from xflow_runtime.errors import XFlowError  # noqa: E402
from xflow_runtime.service.auth import Authenticator, JwtSettings  # noqa: E402
from xflow_runtime.service.principal import Principal  # noqa: E402
from xflow_runtime.service.problems import Problem  # noqa: E402


def request_with(token: str) -> Request:
    return Request({"type": "http", "method": "GET", "path": "/", "headers": [(b"authorization", f"Bearer {token}".encode())]})


def principal_of(auth: Authenticator, token: str) -> Principal | int:
    try:
        return asyncio.run(auth.authenticate(request_with(token)))
    except Problem as problem:
        return problem.status


def hs256_by_hand(payload: dict, secret: bytes) -> str:
    """PyJWT refuses to sign HS256 with a PEM key; an attacker does it by hand."""
    import base64
    import hashlib
    import hmac

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    signing_input = part(b'{"alg":"HS256","typ":"JWT"}') + "." + part(json.dumps(payload).encode())
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + part(signature)


def claims(**extra) -> dict:
    return {"sub": "ann", "tenant": "acme", "role": "user", "exp": int(time.time()) + 60, **extra}


def test_rs256_with_a_jwks_file_and_a_pem_key(tmp_path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [{**jwk, "kid": "k1", "use": "sig"}]}))
    by_jwks = Authenticator(jwt_settings=JwtSettings(jwks_file=str(tmp_path / "jwks.json"), audience="xflow"))
    by_pem = Authenticator(jwt_settings=JwtSettings(public_key=public_pem))

    good = jwt.encode(claims(aud="xflow"), key, "RS256", headers={"kid": "k1"})
    assert principal_of(by_jwks, good) == Principal("acme", "ann", "user")
    assert principal_of(by_pem, jwt.encode(claims(), key, "RS256")) == Principal("acme", "ann", "user")
    assert principal_of(by_jwks, jwt.encode(claims(aud="xflow"), key, "RS256", headers={"kid": "k2"})) == 401
    assert principal_of(by_jwks, jwt.encode(claims(aud="other"), key, "RS256", headers={"kid": "k1"})) == 401
    assert principal_of(by_jwks, jwt.encode(claims(aud="xflow"), other, "RS256", headers={"kid": "k1"})) == 401
    # the token cannot choose HS256 and use the public key as the shared secret
    forged = hs256_by_hand(claims(), public_pem.encode())
    assert principal_of(by_pem, forged) == 401


def test_key_configuration_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(XFlowError, match="at least 32 bytes"):
        JwtSettings(secret="short")
    with pytest.raises(XFlowError, match="exactly one"):
        JwtSettings()
    (tmp_path / "empty.json").write_text('{"keys": []}')
    with pytest.raises(XFlowError, match="no RSA key"):
        JwtSettings(jwks_file=str(tmp_path / "empty.json"))


class KeySetServer(JsonServer):
    """An identity provider's JWKS endpoint on 127.0.0.1 that counts its fetches."""

    def __init__(self) -> None:
        self.keys: list[dict] = []
        super().__init__(lambda method, path, body: (200, {"keys": self.keys}))
        self.url += "/.well-known/jwks.json"

    @property
    def fetches(self) -> int:
        return len(self.requests)

    def publish(self, key: rsa.RSAPrivateKey, kid: str) -> None:
        self.keys.append({**json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key())), "kid": kid, "use": "sig"})


def test_rs256_with_a_jwks_url_caches_the_key_set_and_picks_up_a_rotated_key() -> None:
    first, second = (rsa.generate_private_key(public_exponent=65537, key_size=2048) for _ in range(2))
    provider = KeySetServer()
    try:
        provider.publish(first, "k1")
        auth = Authenticator(jwt_settings=JwtSettings(jwks_url=provider.url, jwks_cooldown_seconds=0))
        for _ in range(3):
            assert principal_of(auth, jwt.encode(claims(), first, "RS256", headers={"kid": "k1"})) == \
                Principal("acme", "ann", "user")
        assert provider.fetches == 1  # the key set is cached
        provider.publish(second, "k2")  # the provider rotates: an unknown kid refetches once
        assert principal_of(auth, jwt.encode(claims(), second, "RS256", headers={"kid": "k2"})) == \
            Principal("acme", "ann", "user")
        assert provider.fetches == 2
        forged = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        assert principal_of(auth, jwt.encode(claims(), forged, "RS256", headers={"kid": "k1"})) == 401
    finally:
        provider.close()


def test_unknown_kids_do_not_hammer_the_identity_provider() -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    provider = KeySetServer()
    try:
        provider.publish(key, "k1")
        auth = Authenticator(jwt_settings=JwtSettings(jwks_url=provider.url, jwks_cooldown_seconds=60))
        assert principal_of(auth, jwt.encode(claims(), key, "RS256", headers={"kid": "k1"})) != 401
        for n in range(10):
            assert principal_of(auth, jwt.encode(claims(), key, "RS256", headers={"kid": f"forged-{n}"})) == 401
        assert provider.fetches == 1  # within the cooldown, no refetch per forged kid
    finally:
        provider.close()


def test_a_jwks_url_must_be_https_unless_on_loopback_and_an_unreachable_one_is_503() -> None:
    with pytest.raises(XFlowError, match="https"):
        JwtSettings(jwks_url="http://idp.example.com/jwks.json")
    from tests.service.support import free_port

    auth = Authenticator(jwt_settings=JwtSettings(jwks_url=f"http://127.0.0.1:{free_port()}/jwks.json"))
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert principal_of(auth, jwt.encode(claims(), key, "RS256", headers={"kid": "k1"})) == 503
