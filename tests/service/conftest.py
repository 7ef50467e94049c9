"""One ``xflow serve`` process per test module (starting DBOS costs seconds on a shared machine),
with its own SQLite files, API keys and scripted model server."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from tests.service.support import WORKFLOWS, ServiceProcess  # noqa: E402
from xflow_runtime.testing import ScriptedModelServer  # noqa: E402

CHAT_SCRIPT = {
    "rules": [{"when": {"last_user_contains": "bye"}, "reply": {"json": {"response": "Goodbye, see you!"}}}],
    "default": {"json": {"response": "Noted: line one\nline two \u2028 émoji 🎉"}},
}


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(CHAT_SCRIPT) as server:
        yield server


@pytest.fixture(scope="module")
def service_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("service")


@pytest.fixture(scope="module")
def workflows_dir(service_dir: Path) -> Path:
    """A copy of the test workflows (hot-reload tests write to it)."""
    import shutil

    target = service_dir / "workflows"
    shutil.copytree(WORKFLOWS, target)
    return target


@pytest.fixture(scope="module")
def db_url(service_dir: Path) -> str:
    return f"sqlite:///{service_dir / 'store' / 'xflow.sqlite'}"


@pytest.fixture(scope="module")
def keys(db_url: str) -> Iterator[dict[str, str]]:
    """Service keys of tenants a and b, user keys of (a, ann), (a, al), (b, bob), (b, bea)."""
    from xflow_runtime.runtime.memory import chat_memory_url
    from xflow_runtime.service.api_keys import ApiKeyStore

    store = ApiKeyStore(chat_memory_url(db_url))
    made = {"a": store.create("a", role="service")[0], "b": store.create("b", role="service")[0]}
    for tenant, user in (("a", "ann"), ("a", "al"), ("b", "bob"), ("b", "bea")):
        made[f"{tenant}/{user}"] = store.create(tenant, user=user, role="user")[0]
    store.close()
    yield made


@pytest.fixture(scope="module")
def service(workflows_dir: Path, db_url: str, keys: dict[str, str], service_dir: Path,
            model_server: ScriptedModelServer) -> Iterator[ServiceProcess]:
    """The log in ``service_dir``: a module may override ``db_url`` with a PostgreSQL store."""
    process = ServiceProcess(workflows_dir, db_url, llm_api_base=model_server.api_base, log_dir=service_dir).start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def client(service: ServiceProcess) -> Iterator[httpx.Client]:
    """A real HTTP client of the module's server (generous timeout: the machine may be loaded)."""
    with httpx.Client(base_url=service.url, timeout=90) as http:
        yield http
