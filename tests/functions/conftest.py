import socket
from typing import AsyncIterator, Iterator

import pytest

from tests.functions.server import RecordingServer
from xflow_runtime.functions import FunctionContext, HttpSettings


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    running = RecordingServer().start()
    yield running
    running.stop()


@pytest.fixture
async def context() -> AsyncIterator[FunctionContext]:
    ctx = FunctionContext(http=HttpSettings(timeout=5.0, connect_timeout=2.0))
    yield ctx
    await ctx.aclose()


@pytest.fixture
def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (the port was just released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
