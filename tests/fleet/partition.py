"""A TCP proxy in front of PostgreSQL's unix socket that a test can cut: one worker reaches the
database only through it, so the test partitions that worker alone while the others (and the
test's own connections) go on.

``cut()`` drops packets the way a broken network does: bytes already sent and every new
connection hang with no answer and no error (the hardest case for a worker: its statements wait
for TCP to give up, far longer than the fleet's death timeout). ``close()`` ends the proxy and
every connection through it.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any
from urllib.parse import parse_qs, urlsplit


class PartitionProxy:
    def __init__(self, database_url: str) -> None:
        parts = urlsplit(database_url)
        self._socket = f"{parse_qs(parts.query)['host'][0]}/.s.PGSQL.5432"
        self._database = parts.path
        self._cut = False
        self._loop = asyncio.new_event_loop()
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.AbstractServer | None = None
        threading.Thread(target=self._loop.run_forever, name="partition-proxy", daemon=True).start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._accept, "127.0.0.1", 0), self._loop).result(10)
        self.port: int = self._server.sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        """The same database, through the proxy (PostgreSQL sees a unix-socket client: no password)."""
        return f"postgresql+psycopg://postgres:@127.0.0.1:{self.port}{self._database}"

    def cut(self) -> None:
        self._cut = True

    def close(self) -> None:
        async def stop() -> None:
            if self._server is not None:
                self._server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            pumps = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in pumps:
                task.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        if self._cut:
            return  # a new connection gets no answer (the client waits for its connect timeout)
        upstream_reader, upstream_writer = await asyncio.open_unix_connection(self._socket)
        self._writers.add(upstream_writer)
        await asyncio.gather(self._pump(reader, upstream_writer), self._pump(upstream_reader, writer),
                             return_exceptions=True)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Any:
        while data := await reader.read(65536):
            if self._cut:
                continue  # dropped on the floor: neither side hears anything again
            writer.write(data)
            await writer.drain()
        if not self._cut:
            writer.close()
