"""The A2A calls themselves, through ``a2a-sdk`` (imported here, lazily: the ``[a2a]`` extra).

Every function takes and returns JSON (``MessageToDict`` of the SDK's protobuf messages), which is
what recorded steps hold; none of them is a step itself. Each call uses its own short-lived HTTP
client carrying the function's auth headers and the ``A2A-Version`` header, so credentials never
reach a shared client and nothing outlives the call.

Outgoing A2A requests carry the current span's W3C ``traceparent`` (and ``tracestate``) through
:func:`xflow_runtime.telemetry.inject_trace_context` (nothing without OpenTelemetry in use)."""

from __future__ import annotations

import functools
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Mapping
from urllib.parse import urlsplit

from xflow_runtime import a2a as codes
from xflow_runtime.error_codes import TIMEOUT
from xflow_runtime.errors import WorkflowError
from xflow_runtime.telemetry import inject_trace_context

#: Where an agent card lives when the operation names only the agent's base URL.
WELL_KNOWN_CARD = "/.well-known/agent-card.json"


@dataclass(frozen=True)
class AgentTarget:
    """Where and how to reach one agent: the card URL (a function's ``operation``), the headers
    that authenticate us, and the bound of one HTTP exchange."""

    card_url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 300.0


def split_card_url(operation: str) -> tuple[str, str]:
    """(base URL, card path) of a function's ``operation`` (a card URL, or a base URL; a
    ``#skill`` suffix is ignored here)."""
    url = operation.split("#", 1)[0].strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise WorkflowError(f"A2A operation {operation!r} is not an http(s) URL", code=codes.PROTOCOL_ERROR)
    if parts.path.endswith(".json"):
        return f"{parts.scheme}://{parts.netloc}", parts.path
    return url.rstrip("/"), WELL_KNOWN_CARD


def _sdk() -> Any:
    try:
        import a2a.client  # noqa: F401  (the SDK's top-level package shares our subpackage's name)
    except ImportError:
        raise WorkflowError("A2A needs the optional extra: pip install 'xflow-runtime[a2a]'",
                            code=codes.NOT_INSTALLED) from None
    import importlib

    return importlib.import_module("a2a")


@functools.lru_cache(maxsize=1)
def _tls() -> Any:
    """One TLS context for every call: building one reads the CA bundle (~25 ms), which each
    short-lived client would otherwise pay again."""
    import httpx

    return httpx.create_ssl_context()


@asynccontextmanager
async def _http(target: AgentTarget) -> AsyncIterator[Any]:
    import httpx

    headers = inject_trace_context({"A2A-Version": "1.0", **target.headers})
    async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(target.timeout, connect=10.0),
                                 verify=_tls()) as client:
        try:
            yield client
        except httpx.TimeoutException as error:
            raise WorkflowError(f"A2A call to {target.card_url} timed out: {error}", code=TIMEOUT) from None
        except httpx.HTTPError as error:
            raise WorkflowError(f"A2A agent at {target.card_url} unreachable: {error}",
                                code=codes.UNAVAILABLE) from None


def _errors(target: AgentTarget, error: Exception) -> WorkflowError:
    """The SDK's errors as our codes (the JSON-RPC code, when there is one, in ``details``)."""
    name = type(error).__name__
    if "Timeout" in name:
        return WorkflowError(f"A2A call to {target.card_url} timed out", code=TIMEOUT)
    if name == "AgentCardResolutionError":
        return WorkflowError(f"A2A agent card at {target.card_url}: {error}", code=codes.UNAVAILABLE,
                             details={"status": getattr(error, "status_code", None)})
    return WorkflowError(f"A2A call to {target.card_url} failed: {name}: {error}", code=codes.PROTOCOL_ERROR,
                         details={"error": name, "code": getattr(error, "code", None)})


async def fetch_card(target: AgentTarget) -> dict[str, Any]:
    sdk = _sdk()
    from google.protobuf.json_format import MessageToDict

    base, path = split_card_url(target.card_url)
    async with _http(target) as client:
        try:
            card = await sdk.client.A2ACardResolver(client, base, path).get_agent_card()
        except sdk.utils.errors.A2AError as error:
            raise _errors(target, error) from None
    return MessageToDict(card)


@asynccontextmanager
async def _client(target: AgentTarget, card: Mapping[str, Any]) -> AsyncIterator[Any]:
    sdk = _sdk()
    from google.protobuf.json_format import ParseDict

    async with _http(target) as http:
        config = sdk.client.ClientConfig(streaming=False, httpx_client=http)
        client = await sdk.client.create_client(ParseDict(dict(card), sdk.types.AgentCard(),
                                                          ignore_unknown_fields=True), client_config=config)
        try:
            yield client
        except sdk.utils.errors.A2AError as error:
            raise _errors(target, error) from None
        finally:
            await client.close()


async def send_message(target: AgentTarget, card: Mapping[str, Any], message: Mapping[str, Any], *,
                       return_immediately: bool, push: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``SendMessage``: the reply as ``{task: …}`` or ``{message: …}``. ``message`` and ``push``
    are the JSON forms of ``Message`` and ``TaskPushNotificationConfig``."""
    sdk = _sdk()
    from google.protobuf.json_format import MessageToDict, ParseDict

    configuration: dict[str, Any] = {"returnImmediately": return_immediately}
    if push is not None:
        configuration["taskPushNotificationConfig"] = dict(push)
    request = ParseDict({"message": dict(message), "configuration": configuration}, sdk.types.SendMessageRequest())
    reply: dict[str, Any] = {}
    async with _client(target, card) as client:
        async for item in client.send_message(request):
            reply = MessageToDict(item)  # non-streaming: one item
    if not reply:
        raise WorkflowError(f"A2A agent at {target.card_url} answered SendMessage with nothing",
                            code=codes.PROTOCOL_ERROR)
    return reply


async def get_task(target: AgentTarget, card: Mapping[str, Any], task_id: str) -> dict[str, Any]:
    """``GetTask``, as a ``{task: …}`` reply."""
    sdk = _sdk()
    from google.protobuf.json_format import MessageToDict

    async with _client(target, card) as client:
        task = await client.get_task(sdk.types.GetTaskRequest(id=task_id, history_length=0))
    return {"task": MessageToDict(task)}


async def cancel_task(target: AgentTarget, card: Mapping[str, Any], task_id: str) -> dict[str, Any]:
    sdk = _sdk()
    from google.protobuf.json_format import MessageToDict

    async with _client(target, card) as client:
        task = await client.cancel_task(sdk.types.CancelTaskRequest(id=task_id))
    return {"task": MessageToDict(task)}
