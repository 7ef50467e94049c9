"""``--llm-script FILE``: answer every LLM call of this process from a reply script.

Starts the scripted model server (:mod:`xflow_runtime.testing`) on 127.0.0.1 and makes it the
default LLM endpoint of AI states (every model keeps its name; no API key is needed).
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from xflow_runtime.llm.client import LLMSettings, configure_default_client


@contextlib.contextmanager
def scripted_llm(script_path: str | None) -> Iterator[object | None]:
    """While open, AI states answer from ``script_path`` (a no-op for ``None``)."""
    if script_path is None:
        yield None
        return
    from xflow_runtime.testing import ScriptedModelServer, load_script

    server = ScriptedModelServer(load_script(script_path)).start()
    configure_default_client(LLMSettings(api_base=server.api_base, api_key="scripted"))
    try:
        yield server
    finally:
        configure_default_client(None)
        server.stop()
