"""What a function invocation needs from its surroundings: secrets, constants, HTTP settings.

One :class:`FunctionContext` normally lives as long as a runtime (or a test). It owns the shared
``httpx.AsyncClient``, the OAuth2 token cache and the cache of OpenAPI documents fetched over
HTTP; close it with :meth:`FunctionContext.aclose` (or ``async with``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from xflow_runtime.functions.registry import FunctionRegistry

if TYPE_CHECKING:  # httpx is imported only when an HTTP function runs
    import httpx

REDACTED = "***"
#: Secret values shorter than this are not redacted from text (they would mangle ordinary words).
_MIN_REDACTED_LENGTH = 4


@dataclass(frozen=True)
class HttpSettings:
    """HTTP configuration of ``rest``/``graphql`` functions and OAuth2 token requests.

    ``base_urls`` maps function names to the base URL their calls go to; it beats the function's
    ``metadata.baseUrl`` and the OpenAPI document's ``servers``. ``default_base_url`` is used last,
    when nothing else names a server. ``client_factory`` builds the shared client (for custom
    transports, proxies, certificates); it receives the timeout to use.
    """

    timeout: float = 30.0
    connect_timeout: float = 10.0
    base_urls: Mapping[str, str] = field(default_factory=dict)
    default_base_url: str | None = None
    follow_redirects: bool = True
    client_factory: Callable[["httpx.Timeout"], "httpx.AsyncClient"] | None = None


class SecretRedactor:
    """Replaces every known secret value in a text by ``***``.

    It knows the workflow's ``$SECRETS`` values (strings, recursively) and any credential the
    runtime obtains itself (OAuth2 access tokens, encoded basic credentials).
    """

    def __init__(self, secrets: Mapping[str, Any]):
        self._values: set[str] = set()
        self.add_all(_strings(secrets))

    def add(self, value: str) -> None:
        if isinstance(value, str) and len(value) >= _MIN_REDACTED_LENGTH:
            self._values.add(value)

    def add_all(self, values: Iterable[str]) -> None:
        for value in values:
            self.add(value)

    def redact(self, text: str) -> str:
        # Longest first, so a secret containing another is replaced whole.
        for value in sorted(self._values, key=len, reverse=True):
            if value in text:
                text = text.replace(value, REDACTED)
        return text


class RedactingLogger:
    """A thin logger front: formats the message, removes secrets, then logs it."""

    def __init__(self, logger: logging.Logger, redactor: SecretRedactor):
        self._logger = logger
        self._redactor = redactor

    def log(self, level: int, message: str, *args: Any) -> None:
        if self._logger.isEnabledFor(level):
            text = message % args if args else message
            self._logger.log(level, self._redactor.redact(text))

    def debug(self, message: str, *args: Any) -> None:
        self.log(logging.DEBUG, message, *args)

    def info(self, message: str, *args: Any) -> None:
        self.log(logging.INFO, message, *args)

    def warning(self, message: str, *args: Any) -> None:
        self.log(logging.WARNING, message, *args)


class FunctionContext:
    """Everything an invocation may use besides the function definition and its arguments."""

    def __init__(
        self,
        *,
        secrets: Mapping[str, Any] | None = None,
        constants: Mapping[str, Any] | None = None,
        registry: FunctionRegistry | None = None,
        http: HttpSettings | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        self.secrets: Mapping[str, Any] = dict(secrets or {})
        self.constants: Mapping[str, Any] = dict(constants or {})
        self.registry = registry if registry is not None else FunctionRegistry()
        self.http = http or HttpSettings()
        self.redactor = SecretRedactor(self.secrets)
        self.log = RedactingLogger(logger or logging.getLogger("xflow_runtime.functions"), self.redactor)
        # Per-context caches: credentials differ between contexts, so what they fetched stays here.
        self.documents: dict[str, Any] = {}
        self.tokens: dict[tuple[Any, ...], Any] = {}
        self.token_locks: dict[tuple[Any, ...], asyncio.Lock] = {}
        self._client: httpx.AsyncClient | None = None

    @property
    def expression_variables(self) -> dict[str, Any]:
        """The variables auth property expressions see (no instance data, no ``$WORKFLOW``)."""
        return {"SECRETS": self.secrets, "CONST": self.constants}

    def client(self) -> "httpx.AsyncClient":
        """The shared HTTP client, created on first use."""
        if self._client is None or self._client.is_closed:
            import httpx

            timeout = httpx.Timeout(self.http.timeout, connect=self.http.connect_timeout)
            if self.http.client_factory is not None:
                self._client = self.http.client_factory(timeout)
            else:
                self._client = httpx.AsyncClient(timeout=timeout, follow_redirects=self.http.follow_redirects)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> "FunctionContext":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)
