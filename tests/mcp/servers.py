"""The MCP test server: one ``MCPServer`` served in-process, over stdio (``python -m
tests.mcp.servers``) and over Streamable HTTP on 127.0.0.1. Every tool call is appended to the
call log named by ``XFLOW_MCP_CALL_LOG`` (when set), so tests can count real executions."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve


class Sum(BaseModel):
    total: int


class Answer(BaseModel):
    colour: str


def _log(line: str) -> None:
    path = os.environ.get("XFLOW_MCP_CALL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as sink:
            sink.write(line + "\n")
            sink.flush()
            os.fsync(sink.fileno())


def _ask_colour() -> Elicit[Answer]:
    return Elicit("Which colour?", Answer)


def build_server(name: str = "test") -> MCPServer:
    server = MCPServer(name)

    @server.tool(description="Add two numbers.")
    def add(a: int, b: int) -> Sum:
        _log(f"done add {a} {b}")
        return Sum(total=a + b)

    @server.tool(name="math.multiply", description="Multiply two numbers (a dotted name).")
    def multiply(a: int, b: int) -> Sum:
        _log(f"done math.multiply {a} {b}")
        return Sum(total=a * b)

    @server.tool(description="Echo a text back, as text content only.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Always fails with a tool error.")
    def broken(reason: str = "broken on purpose") -> str:
        raise ToolError(reason)

    @server.tool(description="Sleeps, then answers.")
    async def slow(seconds: float, tag: str = "") -> Sum:
        _log(f"start slow {tag}")
        await asyncio.sleep(seconds)
        _log(f"done slow {tag}")
        return Sum(total=int(seconds))

    @server.tool(description="Blocks until the file exists, then answers.")
    async def wait_for(path: str, tag: str = "") -> Sum:
        _log(f"start wait_for {tag}")
        while not Path(path).exists():
            await asyncio.sleep(0.02)
        _log(f"done wait_for {tag}")
        return Sum(total=len(tag))

    @server.tool(description="The first call (marker file absent) kills this server process (stdio tests only).")
    def die_once(marker: str) -> Sum:
        if not Path(marker).exists():
            Path(marker).touch()
            os._exit(3)
        return Sum(total=1)

    @server.tool(description="The environment variables this server process sees.")
    def environment() -> dict[str, list[str]]:
        return {"names": sorted(os.environ)}

    @server.tool(description="Asks the user for a colour.")
    def favourite(answer: Annotated[Answer, Resolve(_ask_colour)]) -> Answer:
        _log(f"done favourite {answer.colour}")
        return answer

    extra = os.environ.get("XFLOW_MCP_EXTRA_TOOL_FILE")
    if extra and Path(extra).exists():  # a server that changed between two runs
        @server.tool(description="Only offered once the file exists.")
        def late_tool() -> Sum:
            return Sum(total=0)

    return server


def long_named_tool(server: MCPServer, name: str) -> None:
    @server.tool(name=name, description="A tool with an awkward name.")
    def awkward(x: int = 0) -> Sum:
        return Sum(total=x)


if __name__ == "__main__":
    build_server(sys.argv[1] if len(sys.argv) > 1 else "stdio-test").run("stdio")
