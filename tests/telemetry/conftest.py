"""These tests need the ``[otel]`` extra (it is in ``dev``); without it they are not collected."""

import importlib.util

if importlib.util.find_spec("opentelemetry.sdk") is None:
    collect_ignore_glob = ["test_*.py"]
