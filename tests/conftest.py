"""Shared fixtures live in tests/support/ (one module per kind of real part) and in the public
pytest plugin of xflow_runtime.testing (the scripted model server users can use too)."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from hypothesis import settings  # noqa: E402

# No per-example deadline: the suite shares 2 cores with everything else, and a slow example is
# not a failure. In CI the examples are derandomized, so main's gate is the same on every run;
# locally hypothesis keeps exploring new examples.
settings.register_profile("local", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "local")

pytest_plugins = ["tests.support.postgres", "xflow_runtime.testing.pytest_plugin"]
