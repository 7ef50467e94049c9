"""What a function invocation needs from its surroundings: secrets, constants, HTTP settings.

One :class:`FunctionContext` normally lives as long as a runtime (or a test). It owns the shared
``httpx.AsyncClient``, the OAuth2 token cache and the cache of OpenAPI documents fetched over
HTTP; close it with :meth:`FunctionContext.aclose` (or ``async with``).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
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
    ``metadata.baseUrl`` and the OpenAPI document's ``servers``. ``timeouts`` maps function names
    to a total timeout (seconds) that replaces ``timeout`` for their calls. ``default_base_url`` is used last,
    when nothing else names a server. ``client_factory`` builds the shared client (for custom
    transports, proxies, certificates); it receives the timeout to use.
    """

    timeout: float = 30.0
    connect_timeout: float = 10.0
    base_urls: Mapping[str, str] = field(default_factory=dict)
    timeouts: Mapping[str, float] = field(default_factory=dict)
    default_base_url: str | None = None
    follow_redirects: bool = True
    client_factory: Callable[["httpx.Timeout"], "httpx.AsyncClient"] | None = None


class SecretRedactor:
    """Replaces every known secret value in a text by ``***``.

    It knows the workflow's ``$SECRETS`` values (strings, recursively) and any credential the
    runtime obtains itself (OAuth2 access tokens, encoded basic credentials).
    """

    def __init__(self, secrets: Mapping[str, Any]):
        self._values: tuple[str, ...] = ()  # longest first, so a secret containing another goes whole
        self.add_all(_strings(secrets))

    def add(self, value: str) -> None:
        if isinstance(value, str) and len(value) >= _MIN_REDACTED_LENGTH and value not in self._values:
            self._values = tuple(sorted((*self._values, value), key=len, reverse=True))

    def add_all(self, values: Iterable[str]) -> None:
        for value in values:
            self.add(value)

    def redact(self, text: str) -> str:
        for value in self._values:
            if value in text:
                text = text.replace(value, REDACTED)
        return text


#: Redactors of every live context; the httpx log filter applies them all.
_LIVE_REDACTORS: "weakref.WeakSet[SecretRedactor]" = weakref.WeakSet()


class _HttpxRedactionFilter(logging.Filter):
    """httpx logs each request URL (query string included) at INFO; secrets may sit there."""

    def filter(self, record: logging.LogRecord) -> bool:
        redactors = list(_LIVE_REDACTORS)
        if redactors:
            original = record.getMessage()
            text = original
            for redactor in redactors:
                text = redactor.redact(text)
            if text != original:
                record.msg, record.args = text, None
        return True


def _install_httpx_filter() -> None:
    logger = logging.getLogger("httpx")
    if not any(isinstance(existing, _HttpxRedactionFilter) for existing in logger.filters):
        logger.addFilter(_HttpxRedactionFilter())


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
        _LIVE_REDACTORS.add(self.redactor)
        self.log = RedactingLogger(logger or logging.getLogger("xflow_runtime.functions"), self.redactor)
        # Per-context caches: credentials differ between contexts, so what they fetched stays here.
        self.documents: dict[str, Any] = {}
        self.tokens: dict[tuple[Any, ...], Any] = {}
        self.token_locks: dict[tuple[Any, ...], asyncio.Lock] = {}
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    @property
    def expression_variables(self) -> dict[str, Any]:
        """The variables auth property expressions see (no instance data, no ``$WORKFLOW``)."""
        return {"SECRETS": self.secrets, "CONST": self.constants}

    def client(self) -> "httpx.AsyncClient":
        """The shared HTTP client, created on first use (call it from the event loop that uses it).

        A client's connections belong to one event loop; when a context is reused from another
        loop (e.g. successive ``asyncio.run`` calls), a new client is made for that loop.
        """
        loop = asyncio.get_running_loop()
        if self._client is not None and self._client_loop is not loop:
            self._client, self.token_locks = None, {}  # the old loop's client cannot be awaited here
        if self._client is None or self._client.is_closed:
            import httpx

            _install_httpx_filter()
            timeout = httpx.Timeout(self.http.timeout, connect=self.http.connect_timeout)
            if self.http.client_factory is not None:
                self._client = self.http.client_factory(timeout)
            else:
                self._client = httpx.AsyncClient(timeout=timeout, follow_redirects=self.http.follow_redirects)
            self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._client_loop is asyncio.get_running_loop():
            await client.aclose()
        # A client of another (finished) loop cannot be closed from here; its sockets went with it.

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
