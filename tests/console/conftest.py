"""One ``xflow serve`` process (console enabled, as by default) and one headless chromium per
module, with the scripted model server behind the service."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.console.support import CHROMIUM_ARGS, need_browser
from tests.service.support import ServiceProcess
from xflow_runtime.testing import ScriptedModelServer

HERE = Path(__file__).parent
CHAT_SCRIPT = {"default": {"json": {"response": "Happy to help: the console streams this reply token by token."}}}


@pytest.fixture(scope="module")
def chromium_path() -> str:
    return need_browser()


@pytest.fixture(scope="module")
def console_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("console")
    shutil.copytree(HERE / "workflows", target / "workflows")
    return target


@pytest.fixture(scope="module")
def console_keys(console_dir: Path) -> dict[str, str]:
    """An operator key (service role) of tenant a and end-user keys of ann and al."""
    from xflow_runtime.runtime.memory import chat_memory_url
    from xflow_runtime.service.api_keys import ApiKeyStore

    store = ApiKeyStore(chat_memory_url(f"sqlite:///{console_dir / 'store' / 'xflow.sqlite'}"))
    made = {"operator": store.create("a", role="service")[0],
            "ann": store.create("a", user="ann", role="user")[0], "al": store.create("a", user="al", role="user")[0]}
    store.close()
    return made


@pytest.fixture(scope="module")
def console_service(chromium_path: str, console_dir: Path, console_keys: dict[str, str]) -> Iterator[ServiceProcess]:
    with ScriptedModelServer(CHAT_SCRIPT) as model:
        process = ServiceProcess(console_dir / "workflows", f"sqlite:///{console_dir / 'store' / 'xflow.sqlite'}",
                                 llm_api_base=model.api_base).start()
        try:
            yield process
        finally:
            process.stop()


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
