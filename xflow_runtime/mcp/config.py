"""``mcpServers``: the MCP servers a workflow may use, compiled once with the plan.

    mcpServers:
      - name: files
        transport:
          stdio: {command: python, arguments: [-m, files_server], cwd: ., environment: {ROOT: /srv},
                  inheritEnvironment: [LANG]}
      - name: github
        transport:
          http: {endpoint: 'https://mcp.example.com/mcp', headers: {X-Team: core}}
        authRef: github-token          # an auth definition: bearer, basic or oauth2 (client credentials)
        timeout: PT60S                 # per request; a late request is cancelled (default PT60S)
        protocol: auto                 # auto | legacy | 2026-07-28
        toolPrefix: gh                 # prefix of the names the model sees (default: the server name)

Endpoint, headers and environment values may be ``${ }`` expressions over ``$SECRETS`` and
``$CONST`` (no state data), evaluated when the instance first connects. Nothing here imports the
SDK. Decisions: specs/mcp.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, Mapping

from xflow_runtime.errors import DefinitionError
from xflow_runtime.mcp.names import VALID_PREFIX, default_prefix
from xflow_runtime.plan.durations import parse_duration
from xflow_runtime.plan.functions import AuthDef, compile_auth_def
from xflow_runtime.plan.templates import Template, compile_template

PROTOCOLS = ("auto", "legacy", "2026-07-28")
DEFAULT_TIMEOUT = 60.0
#: Environment names a server may inherit from the runtime's process.
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class McpServerDef:
    name: str
    kind: Literal["stdio", "http"]
    prefix: str
    timeout: float = DEFAULT_TIMEOUT
    protocol: str = "auto"
    # http
    endpoint: Template | None = None
    headers: Template | None = None
    auth: AuthDef | None = None
    # stdio
    command: str | None = None
    arguments: tuple[str, ...] = ()
    environment: Template | None = None
    inherit_environment: tuple[str, ...] = ()
    cwd: str | None = None


def compile_mcp_servers(raw: Any, auth_defs: Mapping[str, Any], *, base_dir: str | None = None,
                        language: str = "jq") -> dict[str, McpServerDef]:
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise _invalid("/mcpServers", "expected a list of MCP server definitions")
    servers: dict[str, McpServerDef] = {}
    prefixes: dict[str, str] = {}
    for index, item in enumerate(raw):
        server = _compile_one(item, auth_defs, f"/mcpServers/{index}", base_dir, language)
        if server.name in servers:
            raise _invalid(f"/mcpServers/{index}/name", f"MCP server {server.name!r} is defined twice")
        if server.prefix and server.prefix in prefixes:
            raise _invalid(f"/mcpServers/{index}", f"the tool prefix {server.prefix!r} of MCP server {server.name!r} "
                                                   f"is also the prefix of {prefixes[server.prefix]!r}; set "
                                                   "'toolPrefix' so the model can tell their tools apart")
        servers[server.name] = server
        if server.prefix:
            prefixes[server.prefix] = server.name
    return servers


def _compile_one(item: Any, auth_defs: Mapping[str, Any], where: str, base_dir: str | None,
                 language: str) -> McpServerDef:
    if not isinstance(item, Mapping):
        raise _invalid(where, "an MCP server definition must be an object")
    name = item.get("name")
    if not isinstance(name, str) or not name.strip() or "#" in name:
        raise _invalid(f"{where}/name", "expected a non-empty name without '#'")
    transport = item.get("transport")
    kinds = [key for key in ("stdio", "http") if isinstance(transport, Mapping) and transport.get(key) is not None]
    if len(kinds) != 1:
        raise _invalid(f"{where}/transport", "needs exactly one of 'stdio' or 'http'")
    prefix = item.get("toolPrefix", default_prefix(name))
    if not isinstance(prefix, str) or not VALID_PREFIX.match(prefix):
        raise _invalid(f"{where}/toolPrefix", f"{prefix!r} must be at most 40 letters, digits, '_' or '-' "
                                               "(tool names reach the model as '<prefix>_<tool>')")
    protocol = str(item.get("protocol", "auto"))
    if protocol not in PROTOCOLS:
        raise _invalid(f"{where}/protocol", f"{protocol!r} is not one of {', '.join(PROTOCOLS)}")
    timeout = parse_duration(item.get("timeout", DEFAULT_TIMEOUT), where=f"{where}/timeout")
    if timeout <= 0:
        raise _invalid(f"{where}/timeout", "every MCP request needs a timeout above zero")
    common: dict[str, Any] = {"name": name, "prefix": prefix, "timeout": timeout, "protocol": protocol}
    assert isinstance(transport, Mapping)  # kinds is empty otherwise
    settings = transport[kinds[0]]
    at = f"{where}/transport/{kinds[0]}"
    if not isinstance(settings, Mapping):
        raise _invalid(at, "expected an object")
    if kinds[0] == "http":
        if item.get("authRef") is not None and item["authRef"] not in auth_defs:
            raise _invalid(f"{where}/authRef", f"{item['authRef']!r} names no auth definition "
                                               f"(known: {', '.join(sorted(auth_defs)) or 'none'})")
        endpoint = settings.get("endpoint")
        if not isinstance(endpoint, str) or not endpoint.strip():
            raise _invalid(f"{at}/endpoint", "expected the server's URL (http:// or https://) or an expression")
        if not endpoint.lstrip().startswith(("http://", "https://", "${", "$")):
            raise _invalid(f"{at}/endpoint", f"{endpoint!r} is not an http(s) URL")
        headers = settings.get("headers") or {}
        if not isinstance(headers, Mapping):
            raise _invalid(f"{at}/headers", "expected an object of header names to values")
        return McpServerDef(kind="http", endpoint=compile_template(endpoint, language=language),
                            headers=compile_template(dict(headers), language=language),
                            auth=None if item.get("authRef") is None else compile_auth_def(auth_defs[item["authRef"]]),
                            **common)
    if item.get("authRef") is not None:
        raise _invalid(f"{where}/authRef", "a stdio server takes its credentials from 'environment', not authRef")
    command = settings.get("command")
    if not isinstance(command, str) or not command.strip():
        raise _invalid(f"{at}/command", "expected the command that starts the server")
    arguments = settings.get("arguments") or []
    if not isinstance(arguments, list) or not all(isinstance(a, (str, int, float)) for a in arguments):
        raise _invalid(f"{at}/arguments", "expected a list of strings")
    environment = settings.get("environment") or {}
    if not isinstance(environment, Mapping) or not all(_ENV_NAME.match(str(k)) for k in environment):
        raise _invalid(f"{at}/environment", "expected an object of environment variable names to values")
    inherit = settings.get("inheritEnvironment") or []
    if not isinstance(inherit, list) or not all(isinstance(n, str) and _ENV_NAME.match(n) for n in inherit):
        raise _invalid(f"{at}/inheritEnvironment", "expected a list of environment variable names")
    cwd = settings.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise _invalid(f"{at}/cwd", "expected a directory")
    if cwd is not None and base_dir is not None and not cwd.startswith("/"):
        import os

        cwd = os.path.normpath(os.path.join(base_dir, cwd))
    return McpServerDef(kind="stdio", command=command, arguments=tuple(str(a) for a in arguments),
                        environment=compile_template(dict(environment), language=language),
                        inherit_environment=tuple(inherit), cwd=cwd, **common)


def split_operation(operation: Any, function_name: str) -> tuple[str, str]:
    """``<server>#<tool>`` of a ``type: mcp`` function."""
    if isinstance(operation, str) and "#" in operation:
        server, _, tool = operation.partition("#")
        if server and tool:
            return server, tool
    raise _invalid(f"function {function_name!r}", f"an mcp operation must be '<mcpServer>#<tool>', found {operation!r}")


def _invalid(where: str, message: str) -> DefinitionError:
    return DefinitionError([f"{where}: {message}"])
