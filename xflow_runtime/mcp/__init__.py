"""Model Context Protocol: MCP servers declared in a workflow (``mcpServers``), functions of
``type: mcp``, ``aiagent`` tools from a server, and ``xflow serve --mcp`` (specs/mcp.md).

Only the definitions (:mod:`xflow_runtime.mcp.config`) and the name mapping
(:mod:`xflow_runtime.mcp.names`) are imported when a workflow is loaded; the official ``mcp`` SDK
(extra ``[mcp]``) is imported the first time a server is contacted.
"""

from __future__ import annotations

#: ``tools/call`` answered with ``isError: true`` (a function's failure; an agent's tool message).
TOOL_ERROR = "MCPToolError"
#: A JSON-RPC error from the server (``details.code`` holds the numeric code).
PROTOCOL_ERROR = "MCPProtocolError"
#: No answer within the server's ``timeout``; the request was cancelled.
TIMEOUT = "MCPTimeout"
#: The server could not be started or reached, or its handshake failed.
UNAVAILABLE = "MCPUnavailable"
#: ``structuredContent`` missing or not matching the tool's ``outputSchema``.
OUTPUT_INVALID = "MCPOutputInvalid"
#: The server asked for user input where nobody can answer (a function call, not an agent).
INPUT_REQUIRED = "MCPInputRequired"
#: The ``mcp`` extra is not installed.
NOT_INSTALLED = "MCPNotInstalled"
#: An HTTP server refused the credentials (HTTP 401 or 403).
UNAUTHORIZED = "MCPUnauthorized"
#: A tool named in the definition is not offered by the server.
TOOL_NOT_FOUND = "MCPToolNotFound"

ERROR_CODES = (TOOL_ERROR, PROTOCOL_ERROR, TIMEOUT, UNAVAILABLE, UNAUTHORIZED, OUTPUT_INVALID, INPUT_REQUIRED,
               NOT_INSTALLED, TOOL_NOT_FOUND)
