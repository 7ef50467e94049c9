"""The browser tests' harness: without chromium (or Playwright) they skip on a developer's machine
with a reason that says how to install it, and fail under CI=true (specs/console.md §5)."""

from __future__ import annotations

import pytest


def test_without_chromium_the_browser_tests_skip_saying_how_to_install_it_but_fail_in_ci(monkeypatch, tmp_path) -> None:
    from tests.console.support import need_browser

    missing = str(tmp_path / "no-chromium")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"apt-get install -y chromium"):
        need_browser(missing)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"no chromium at .*no-chromium"):
        need_browser(missing)
