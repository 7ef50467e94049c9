"""Shared fixtures live in tests/support/ (one module per kind of real part) and in the public
pytest plugin of xflow_runtime.testing (the scripted model server users can use too)."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

pytest_plugins = ["tests.support.postgres", "xflow_runtime.testing.pytest_plugin"]
