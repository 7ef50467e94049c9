"""Compiled function and auth definitions (SW 0.8 ``functions`` / ``auth``, xFlow inline REST).

The plan compiler calls :func:`compile_function_def` once per function definition; the
interpreter hands the resulting :class:`FunctionDef` to
:func:`xflow_runtime.functions.invoke_function`. Decisions are in ``specs/functions.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

from xflow_runtime.errors import DefinitionError

FunctionType = Literal["rest", "graphql", "custom", "expression", "rpc", "asyncapi", "odata", "mcp", "a2a"]
AuthScheme = Literal["basic", "bearer", "oauth2"]

#: ``mcp`` and ``a2a`` are our extensions: one MCP server's tool (specs/mcp.md), an Agent2Agent
#: agent by its card URL (specs/a2a.md).
FUNCTION_TYPES: tuple[str, ...] = ("rest", "graphql", "custom", "expression", "rpc", "asyncapi", "odata", "mcp",
                                   "a2a")
AUTH_SCHEMES: tuple[str, ...] = ("basic", "bearer", "oauth2")
HTTP_METHODS: tuple[str, ...] = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


@dataclass(frozen=True)
class AuthDef:
    """One entry of the workflow's ``auth`` list.

    ``properties`` is either an object whose values may be ``${ }`` expressions (usually over
    ``$SECRETS``), or one expression string that evaluates to such an object.
    """

    name: str
    scheme: AuthScheme
    properties: str | dict[str, Any]


@dataclass(frozen=True)
class FunctionDef:
    """One entry of the workflow's ``functions`` list, with its ``authRef`` resolved.

    ``operation`` is a string for every type, except ``rest`` where xFlow also allows an inline
    OpenAPI Paths Object (a dict). ``base_dir`` is the directory of the workflow file; relative
    OpenAPI document paths resolve against it.
    """

    name: str
    type: FunctionType
    operation: str | dict[str, Any]
    auth: AuthDef | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    base_dir: str | None = None


def compile_auth_def(raw: Mapping[str, Any]) -> AuthDef:
    """Check and freeze one raw auth definition."""
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise _invalid("auth definition needs a non-empty string 'name'")
    scheme = raw.get("scheme", "basic")
    if scheme not in AUTH_SCHEMES:
        raise _invalid(f"auth '{name}': scheme {scheme!r} is not one of {', '.join(AUTH_SCHEMES)}")
    properties = raw.get("properties")
    if not isinstance(properties, (str, dict)) or not properties:
        raise _invalid(f"auth '{name}': 'properties' must be an object or an expression string")
    if isinstance(properties, dict):
        required = {"basic": ("username", "password"), "bearer": ("token",), "oauth2": ("clientId",)}[scheme]
        missing = [key for key in required if key not in properties]
        if missing:
            raise _invalid(f"auth '{name}': scheme {scheme} needs properties {', '.join(missing)}")
    return AuthDef(name=name, scheme=scheme, properties=dict(properties) if isinstance(properties, dict) else properties)


def compile_function_def(raw: dict[str, Any], auth_defs: dict[str, dict[str, Any]],
                         base_dir: str | None) -> FunctionDef:
    """Check one raw function definition and resolve its ``authRef`` against ``auth_defs``.

    ``auth_defs`` maps auth names to their raw definitions. Raises :class:`DefinitionError`
    with one message per problem found.
    """
    if not isinstance(raw, Mapping):
        raise _invalid(f"function definition must be an object, found {type(raw).__name__}")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise _invalid("function definition needs a non-empty string 'name'")
    type_ = raw.get("type", "rest")
    if type_ not in FUNCTION_TYPES:
        raise _invalid(f"function '{name}': type {type_!r} is not one of {', '.join(FUNCTION_TYPES)}")
    operation: Any = raw.get("operation")  # a str or an inline dict once checked
    _check_operation(name, type_, operation)
    metadata = raw.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise _invalid(f"function '{name}': 'metadata' must be an object")
    auth = None
    auth_ref = raw.get("authRef")
    if auth_ref is not None:
        if not isinstance(auth_ref, str) or auth_ref not in auth_defs:
            known = ", ".join(sorted(auth_defs)) or "none defined"
            raise _invalid(f"function '{name}': authRef {auth_ref!r} names no auth definition (known: {known})")
        auth = compile_auth_def(auth_defs[auth_ref])
    return FunctionDef(name=name, type=type_, operation=operation, auth=auth, metadata=dict(metadata), base_dir=base_dir)


def _check_operation(name: str, type_: str, operation: Any) -> None:
    if type_ == "rest" and isinstance(operation, Mapping):
        _check_inline_paths(name, operation)
        return
    if not isinstance(operation, str) or not operation.strip():
        raise _invalid(f"function '{name}': 'operation' must be a non-empty string")
    if type_ == "rest" and "#" not in operation:
        raise _invalid(f"function '{name}': rest operation {operation!r} must be '<openapi document>#<operationId>'")
    if type_ == "mcp" and not _is_mcp_operation(operation):
        raise _invalid(f"function '{name}': mcp operation {operation!r} must be '<mcpServer>#<tool>' (xflow-runtime extension)")
    if type_ == "a2a" and not operation.split("#", 1)[0].strip().startswith(("http://", "https://")):
        raise _invalid(f"function '{name}': a2a operation {operation!r} must be the agent card's http(s) URL "
                       "(or the agent's base URL)")
    if type_ == "graphql":
        parts = operation.rsplit("#", 2)
        if len(parts) != 3 or parts[1] not in ("query", "mutation") or not parts[0] or not parts[2]:
            raise _invalid(
                f"function '{name}': graphql operation {operation!r} must be '<endpoint>#query|mutation#<field>'"
            )
    if type_ == "custom" and operation.startswith("python:"):
        target = operation[len("python:"):]
        module, _, attribute = target.partition(":")
        if not module or not attribute:
            raise _invalid(f"function '{name}': custom operation {operation!r} must be 'python:package.module:function'")


def _is_mcp_operation(operation: str) -> bool:
    server, _, tool = operation.partition("#")
    return bool(server) and bool(tool)


def _check_inline_paths(name: str, operation: Mapping[str, Any]) -> None:
    if len(operation) != 1:
        raise _invalid(f"function '{name}': an inline rest operation must hold exactly one path, found {len(operation)}")
    path, item = next(iter(operation.items()))
    if not isinstance(path, str) or not path.startswith("/"):
        raise _invalid(f"function '{name}': inline rest path {path!r} must start with '/'")
    methods = [key for key in item if key in HTTP_METHODS] if isinstance(item, Mapping) else []
    if len(methods) != 1:
        raise _invalid(f"function '{name}': inline rest path {path!r} must declare exactly one HTTP method")


def _invalid(message: str) -> DefinitionError:
    return DefinitionError([message])


#: SonataFlow ``custom`` operations that run inside its JVM (Java beans, Camel routes, DMN models,
#: Knative services, Jython scripts, classpath RPC add-ons): nothing here can run them.
JVM_OPERATION_PREFIXES: tuple[str, ...] = ("service:", "camel:", "dmn", "knative:", "script:", "rpc:")


def jvm_only_operation(function_type: Any, operation: Any) -> bool:
    """Whether a ``custom`` function's operation needs SonataFlow's JVM."""
    return function_type == "custom" and isinstance(operation, str) and operation.startswith(JVM_OPERATION_PREFIXES)


def python_implementation_hint(name: str) -> str:
    """How to provide a Python implementation of the function ``name`` instead."""
    return (f"provide a Python implementation: register a callable under the function name {name!r} "
            f"(Runtime(functions={{{name!r}: …}}) or a FunctionRegistry), or write operation: "
            "'python:package.module:function'")
