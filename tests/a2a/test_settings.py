"""Where ``xflow serve`` takes A2A push settings from: its own flags, else the service's callback
settings (one public address and one secret for both kinds of agent callback)."""

from __future__ import annotations

import argparse

import pytest

from xflow_runtime.cli.serve import a2a_settings, register
from xflow_runtime.errors import XFlowError

SECRET = "s" * 40


def parsed(*flags: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(), "serve")
    return parser.parse_args(["serve", "--workflows", ".", *flags])


def test_without_a2a_flags_the_service_callback_settings_are_used(monkeypatch) -> None:
    monkeypatch.setenv("SHARED_SECRET", SECRET)
    settings = a2a_settings(parsed("--callback-secret-env", "SHARED_SECRET", "--public-url", "https://flows.example"))
    assert settings.callback_url.startswith("https://flows.example") and settings.push_ready


def test_the_a2a_flags_win_and_nothing_set_means_no_push(monkeypatch) -> None:
    monkeypatch.delenv("XFLOW_CALLBACK_SECRET", raising=False)
    assert a2a_settings(parsed()) is None
    monkeypatch.setenv("A2A_SECRET", SECRET)
    monkeypatch.setenv("SHARED_SECRET", "t" * 40)
    settings = a2a_settings(parsed("--a2a-callback-secret-env", "A2A_SECRET", "--a2a-callback-url", "https://a2a.example",
                                   "--callback-secret-env", "SHARED_SECRET", "--public-url", "https://flows.example"))
    assert settings.callback_url.startswith("https://a2a.example")
    with pytest.raises(XFlowError, match="is not set"):
        a2a_settings(parsed("--callback-secret-env", "NOT_SET_ANYWHERE"))
