"""Hints for likely typos the schema lets through (XF130).

The 0.8 root allows unknown keys (extensions, vendor data), so ``function:`` instead of
``functions:`` is schema-valid and silently ignored. A key that is not known but is close to a
known one gets a warning; other unknown keys stay silent.
"""

from __future__ import annotations

import difflib
from typing import Any

from xflow_runtime.definition.walk import Reporter

#: The 0.8 top-level properties (plus the dialect's `extensions`); the schema allows any other key.
TOP_LEVEL_KEYS = (
    "id", "key", "name", "description", "version", "annotations", "dataInputSchema", "secrets", "constants",
    "start", "specVersion", "expressionLang", "timeouts", "errors", "keepActive", "metadata", "events",
    "functions", "autoRetries", "retries", "auth", "states", "extensions",
)


def check_top_level_keys(document: dict[str, Any], report: Reporter) -> None:
    for key in document:
        if key in TOP_LEVEL_KEYS or not isinstance(key, str):
            continue
        close = difflib.get_close_matches(key, TOP_LEVEL_KEYS, n=1, cutoff=0.75)
        if close and close[0] not in document:
            report("/" + key.replace("~", "~0").replace("/", "~1"), f"unknown top-level key {key!r} is ignored; "
                   f"did you mean {close[0]!r}?", "XF130", severity="warning", prefer_key=True)
