"""Driving the console in a real browser: Debian's chromium through Playwright (which cannot
download its own browsers here), axe-core from the ``axe-playwright-python`` wheel (it ships
``axe.min.js``; we only read that file), and a matcher of request paths against the OpenAPI
document. specs/console.md §5."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "test-output" / "console"  # gitignored: every page's screenshot, every run
CHROMIUM = os.environ.get("XFLOW_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
HOW_TO_INSTALL = ("the console's browser tests need Debian's chromium and the Python packages of the dev extra: "
                  "`apt-get install -y chromium` and `pip install -e '.[dev]'` (playwright, axe-playwright-python)")


def need_browser(executable: str = CHROMIUM) -> str:
    """The chromium executable, else skip (a developer's machine) or fail (CI=true: CI must run them)."""
    missing = []
    if not Path(executable).is_file():
        missing.append(f"no chromium at {executable}")
    for module in ("playwright", "axe_playwright_python"):
        try:
            __import__(module)
        except ImportError:
            missing.append(f"no Python package {module}")
    if missing:
        reason = f"{'; '.join(missing)}: {HOW_TO_INSTALL}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return executable


def axe_source() -> str:
    import axe_playwright_python

    return (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text(encoding="utf-8")


def axe_violations(page: Any, source: str) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations (WCAG 2.0/2.1/2.2 A and AA rules) on the page.
    The script is evaluated over the DevTools protocol, so the console's CSP (script-src 'self')
    stays as it is."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(source)
    result = page.evaluate("""() => axe.run(document, {runOnly: {type: 'tag',
        values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']}, resultTypes: ['violations']})""")
    return [{"id": v["id"], "impact": v["impact"], "help": v["help"],
             "targets": [n["target"] for n in v["nodes"]][:5]}
            for v in result["violations"] if v["impact"] in ("serious", "critical")]


def template_matcher(openapi: dict[str, Any]) -> list[tuple[re.Pattern[str], str, set[str]]]:
    found = []
    for template, operations in openapi["paths"].items():
        parts = re.split(r"\{[^}]+\}", template)  # /v1/instances/{instance_id} → one segment per parameter
        pattern = re.compile("^" + "[^/]+".join(re.escape(part) for part in parts) + "$")
        found.append((pattern, template, {m.upper() for m in operations}))
    return found


def operation_of(matchers: list[tuple[re.Pattern[str], str, set[str]]], method: str, path: str) -> str | None:
    """The OpenAPI path template that documents ``method path``, or None."""
    for pattern, template, methods in matchers:
        if pattern.match(path) and method.upper() in methods:
            return template
    return None
