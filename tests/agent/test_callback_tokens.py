"""Signed per-request callback tokens (xflow_runtime/callback_tokens.py, specs/states-human.md §7.1):
a token verifies only with its secret, for its purpose, before its expiry; any change to it is
refused; nothing a caller sends makes the verifier fail otherwise than with InvalidCallbackToken."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xflow_runtime.callback_tokens import CallbackSigner, InvalidCallbackToken

SECRET = b"s" * 32
OTHER = b"o" * 32
NOW = 1_700_000_000


def test_a_token_names_its_instance_request_and_expiry() -> None:
    signer = CallbackSigner(SECRET)
    claims = signer.verify(signer.sign("aiagentproxy", "inst-1", "req-1", NOW + 60), "aiagentproxy", now=NOW)
    assert (claims.instance_id, claims.request_id, claims.expires_at) == ("inst-1", "req-1", NOW + 60)


@pytest.mark.parametrize("case, reason", [("other-secret", "signature"), ("other-purpose", "purpose"),
                                          ("expired", "expired"), ("garbage", "malformed")])
def test_refusals_say_why(case: str, reason: str) -> None:
    signer = CallbackSigner(SECRET)
    token = signer.sign("aiagentproxy", "i", "r", NOW + 60)
    verifier, purpose, now = signer, "aiagentproxy", NOW
    if case == "other-secret":
        verifier = CallbackSigner(OTHER)
    elif case == "other-purpose":
        token = signer.sign("a2a-push", "i", "r", NOW + 60)
    elif case == "expired":
        now = NOW + 60
    else:
        token = "v1.not-base64!.x"
    with pytest.raises(InvalidCallbackToken) as refused:
        verifier.verify(token, purpose, now=now)
    assert refused.value.reason == reason and token not in str(refused.value)


def test_rotation_old_tokens_verify_while_the_old_secret_is_listed() -> None:
    old_token = CallbackSigner(OTHER).sign("p", "i", "r", NOW + 60)
    rotated = CallbackSigner([SECRET, OTHER])
    assert rotated.verify(old_token, "p", now=NOW).request_id == "r"
    new_token = rotated.sign("p", "i", "r2", NOW + 60)
    assert CallbackSigner(SECRET).verify(new_token, "p", now=NOW).request_id == "r2"
    with pytest.raises(InvalidCallbackToken):
        CallbackSigner(SECRET).verify(old_token, "p", now=NOW)


def test_short_secrets_are_refused() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        CallbackSigner(b"short")


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_any_change_to_a_token_is_refused(data: st.DataObject) -> None:
    signer = CallbackSigner(SECRET)
    token = signer.sign("aiagentproxy", data.draw(st.text(min_size=1, max_size=40)),
                        data.draw(st.text(min_size=1, max_size=40)), NOW + 3600)
    index = data.draw(st.integers(0, len(token) - 1))
    replacement = data.draw(st.characters(codec="ascii").filter(lambda c: c != token[index]))
    changed = token[:index] + replacement + token[index + 1:]
    with pytest.raises(InvalidCallbackToken):  # also in base64url's unused trailing bits
        signer.verify(changed, "aiagentproxy", now=NOW)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_whatever_is_sent_the_verifier_only_refuses(text: str) -> None:
    with pytest.raises(InvalidCallbackToken):
        CallbackSigner(SECRET).verify(text, "aiagentproxy", now=NOW)
