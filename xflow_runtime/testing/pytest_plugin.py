"""pytest plugin: the ``scripted_model`` fixture (a started :class:`ScriptedModelServer`).

Enable it with ``pytest_plugins = ["xflow_runtime.testing.pytest_plugin"]``. The fixture is
function-scoped and empty; give it replies with ``scripted_model.set_script([...])`` or mark a
test with ``@pytest.mark.llm_script([...])``.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from xflow_runtime.testing.server import ScriptedModelServer


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "llm_script(script): reply script for the scripted_model fixture")


@pytest.fixture
def scripted_model(request: pytest.FixtureRequest) -> Iterator[ScriptedModelServer]:
    marker = request.node.get_closest_marker("llm_script")
    script = marker.args[0] if marker and marker.args else None
    with ScriptedModelServer(script) as server:
        yield server
