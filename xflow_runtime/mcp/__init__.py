"""Model Context Protocol: MCP servers declared in a workflow (``mcpServers``), functions of
``type: mcp``, ``aiagent`` tools from a server, and ``xflow serve --mcp`` (specs/mcp.md).

Only the definitions (:mod:`xflow_runtime.mcp.config`) and the name mapping
(:mod:`xflow_runtime.mcp.names`) are imported when a workflow is loaded; the official ``mcp`` SDK
(extra ``[mcp]``) is imported the first time a server is contacted.
"""

from __future__ import annotations

# The error codes live in the one catalogue (xflow_runtime.error_codes); the short names read well here.
from xflow_runtime.error_codes import MCP_INPUT_REQUIRED as INPUT_REQUIRED  # noqa: E402
from xflow_runtime.error_codes import MCP_NOT_INSTALLED as NOT_INSTALLED  # noqa: E402
from xflow_runtime.error_codes import MCP_OUTPUT_INVALID as OUTPUT_INVALID  # noqa: E402
from xflow_runtime.error_codes import MCP_PROTOCOL_ERROR as PROTOCOL_ERROR  # noqa: E402
from xflow_runtime.error_codes import MCP_TIMEOUT as TIMEOUT  # noqa: E402
from xflow_runtime.error_codes import MCP_TOOL_ERROR as TOOL_ERROR  # noqa: E402
from xflow_runtime.error_codes import MCP_TOOL_NOT_FOUND as TOOL_NOT_FOUND  # noqa: E402
from xflow_runtime.error_codes import MCP_UNAUTHORIZED as UNAUTHORIZED  # noqa: E402
from xflow_runtime.error_codes import MCP_UNAVAILABLE as UNAVAILABLE  # noqa: E402

ERROR_CODES = (TOOL_ERROR, PROTOCOL_ERROR, TIMEOUT, UNAVAILABLE, UNAUTHORIZED, OUTPUT_INVALID, INPUT_REQUIRED,
               NOT_INSTALLED, TOOL_NOT_FOUND)

__all__ = ["ERROR_CODES", "INPUT_REQUIRED", "NOT_INSTALLED", "OUTPUT_INVALID", "PROTOCOL_ERROR", "TIMEOUT", "TOOL_ERROR",
           "TOOL_NOT_FOUND", "UNAUTHORIZED", "UNAVAILABLE"]
