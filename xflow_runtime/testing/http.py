"""A minimal HTTP/1.1 server on asyncio streams (keep-alive, Content-Length and chunked bodies).

Just enough for OpenAI-compatible clients (httpx, aiohttp, requests) talking to the scripted
model server; not a general web server.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Awaitable, Callable, Mapping

MAX_BODY = 64 * 1024 * 1024


@dataclass
class HttpResponse:
    status: int
    headers: dict[str, str]
    chunks: list[bytes] = field(default_factory=list)  # one chunk: sized body; several: streamed


Handler = Callable[[str, str, Mapping[str, str], bytes], Awaitable[HttpResponse]]


async def serve_http(handler: Handler, host: str, port: int) -> asyncio.Server:
    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await _serve_one(handler, reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            # Server shutdown. Ending normally keeps asyncio's stream callback from logging the
            # cancellation as an error; nothing awaits this task.
            pass
        finally:
            writer.close()

    return await asyncio.start_server(on_connection, host, port, backlog=4096)


async def _serve_one(handler: Handler, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    request_line = await reader.readline()
    if not request_line.strip():
        return False
    try:
        method, target, version = request_line.decode("latin-1").split()
    except ValueError:
        await _write(writer, HttpResponse(400, {"content-type": "text/plain"}, [b"bad request line"]), keep_alive=False)
        return False
    headers: dict[str, str] = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await _read_body(reader, headers)
    keep_alive = headers.get("connection", "").lower() != "close" and version == "HTTP/1.1"
    response = await handler(method.upper(), target, headers, body)
    await _write(writer, response, keep_alive)
    return keep_alive


async def _read_body(reader: asyncio.StreamReader, headers: Mapping[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts: list[bytes] = []
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readline()
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readline()
    length = int(headers.get("content-length") or 0)
    if length > MAX_BODY:
        raise ConnectionError("request body too large")
    return await reader.readexactly(length) if length else b""


async def _write(writer: asyncio.StreamWriter, response: HttpResponse, keep_alive: bool) -> None:
    reason = HTTPStatus(response.status).phrase if response.status in HTTPStatus._value2member_map_ else "Status"
    head = [f"HTTP/1.1 {response.status} {reason}"]
    streamed = len(response.chunks) > 1
    headers = dict(response.headers)
    headers["connection"] = "keep-alive" if keep_alive else "close"
    if streamed:
        headers["transfer-encoding"] = "chunked"
    else:
        headers["content-length"] = str(sum(len(chunk) for chunk in response.chunks))
    head.extend(f"{name}: {value}" for name, value in headers.items())
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
    if streamed:
        for chunk in response.chunks:
            writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        writer.write(b"0\r\n\r\n")
    else:
        writer.write(b"".join(response.chunks))
    await writer.drain()
