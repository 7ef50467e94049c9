"""Function auth (``authRef``): basic, bearer and OAuth2 credentials as request headers.

Property values may be ``${ }`` expressions over ``$SECRETS`` and ``$CONST`` (no instance data);
a whole ``properties`` string is one expression that yields the properties object. Resolved
credentials are added to the context's redactor, so they never appear in logs or errors.
OAuth2 (``clientCredentials`` and ``password`` grants) tokens are cached per context until
shortly before they expire. Decisions: specs/functions.md §auth.
"""

from __future__ import annotations

import asyncio
import base64
import time
from typing import Any, Mapping

from xflow_runtime.error_codes import AUTH_ERROR
from xflow_runtime.errors import ExpressionError, WorkflowError
from xflow_runtime.expressions import compile_expression, is_expression
from xflow_runtime.functions.context import FunctionContext
from xflow_runtime.functions.http import HttpRequest, decode_body, send
from xflow_runtime.plan.functions import AuthDef

#: Tokens are renewed this many seconds before ``expires_in`` runs out (at most 10% of it).
EXPIRY_MARGIN = 30.0
_GRANTS = {"clientCredentials": "client_credentials", "password": "password"}
_DISCOVERY = "/.well-known/openid-configuration"


def resolve_properties(auth: AuthDef, context: FunctionContext) -> dict[str, Any]:
    """The auth properties with every expression evaluated (and every credential redacted)."""
    variables = context.expression_variables
    try:
        if isinstance(auth.properties, str):
            resolved = compile_expression(auth.properties).evaluate({}, variables)
            if not isinstance(resolved, Mapping):
                raise WorkflowError(
                    f"auth '{auth.name}': properties expression gave {type(resolved).__name__}, expected an object",
                    code=AUTH_ERROR,
                )
            resolved = dict(resolved)
        else:
            resolved = {key: _evaluate(value, variables) for key, value in auth.properties.items()}
    except ExpressionError as exc:
        raise WorkflowError(f"auth '{auth.name}': {exc}", code=AUTH_ERROR) from None
    for key in ("password", "token", "clientSecret", "subjectToken"):
        if isinstance(resolved.get(key), str):
            context.redactor.add(resolved[key])
    return resolved


async def auth_headers(auth: AuthDef | None, context: FunctionContext) -> dict[str, str]:
    """The headers that authenticate a request with ``auth`` (``{}`` without auth)."""
    if auth is None:
        return {}
    properties = resolve_properties(auth, context)
    if auth.scheme == "basic":
        username, password = _required(auth, properties, "username"), _required(auth, properties, "password")
        encoded = base64.b64encode(f"{username}:{password}".encode()).decode()
        context.redactor.add(encoded)
        return {"Authorization": f"Basic {encoded}"}
    if auth.scheme == "bearer":
        return {"Authorization": f"Bearer {_required(auth, properties, 'token')}"}
    token = await oauth2_token(auth, properties, context)
    return {"Authorization": f"Bearer {token}"}


async def send_authenticated(context: FunctionContext, what: str, request: HttpRequest, auth: AuthDef | None) -> Any:
    """Send ``request`` (already carrying ``auth_headers``); a 401 while using a cached OAuth2
    token drops the token, fetches a new one and retries once (it was revoked or expired early)."""
    response = await send(context, what, request)
    if response.status_code == 401 and forget_token(auth, context):
        request.headers.update(await auth_headers(auth, context))
        response = await send(context, what, request)
    return response


def forget_token(auth: AuthDef | None, context: FunctionContext) -> bool:
    """Drop a cached OAuth2 token (after a 401). True when there was one to drop."""
    if auth is None or auth.scheme != "oauth2":
        return False
    key = _token_key(auth, resolve_properties(auth, context))
    return context.tokens.pop(key, None) is not None


async def oauth2_token(auth: AuthDef, properties: Mapping[str, Any], context: FunctionContext) -> str:
    key = _token_key(auth, properties)
    lock = context.token_locks.setdefault(key, asyncio.Lock())
    async with lock:  # concurrent calls wait for one token request
        cached = context.tokens.get(key)
        if cached is not None and (cached[1] is None or cached[1] > time.monotonic()):
            return cached[0]
        token, expires_in = await _request_token(auth, properties, context)
        context.redactor.add(token)
        expires_at = None
        if expires_in is not None:
            expires_at = time.monotonic() + max(0.0, expires_in - min(EXPIRY_MARGIN, expires_in / 10))
        context.tokens[key] = (token, expires_at)
        return token


async def token_endpoint(auth: AuthDef, properties: Mapping[str, Any], context: FunctionContext) -> str:
    """``metadata.tokenUrl``; else ``authority`` itself when its path ends in ``/token``; else
    the ``token_endpoint`` of the authority's OpenID discovery document (cached)."""
    metadata = properties.get("metadata") or {}
    if isinstance(metadata, Mapping) and isinstance(metadata.get("tokenUrl"), str):
        return metadata["tokenUrl"]
    authority = _required(auth, properties, "authority").rstrip("/")
    if authority.endswith("/token"):
        return authority
    discovery_url = authority + _DISCOVERY
    document = context.documents.get(discovery_url)
    if document is None:
        response = await send(context, f"auth '{auth.name}' discovery", HttpRequest("get", discovery_url))
        document = decode_body(response) if response.status_code == 200 else None
        if not isinstance(document, Mapping) or not isinstance(document.get("token_endpoint"), str):
            raise WorkflowError(
                f"auth '{auth.name}': {discovery_url} gave no token_endpoint (HTTP {response.status_code}); "
                "set authority to the token endpoint or properties.metadata.tokenUrl",
                code=AUTH_ERROR, status=response.status_code,
            )
        context.documents[discovery_url] = document
    return document["token_endpoint"]


async def _request_token(auth: AuthDef, properties: Mapping[str, Any], context: FunctionContext) -> tuple[str, float | None]:
    grant = properties.get("grantType")
    if grant not in _GRANTS:
        raise WorkflowError(
            f"auth '{auth.name}': oauth2 grantType {grant!r} is not supported (use clientCredentials or password)",
            code=AUTH_ERROR,
        )
    url = await token_endpoint(auth, properties, context)
    form: dict[str, Any] = {"grant_type": _GRANTS[grant]}
    if grant == "password":
        form["username"] = _required(auth, properties, "username")
        form["password"] = _required(auth, properties, "password")
    if properties.get("scopes"):
        form["scope"] = " ".join(properties["scopes"])
    if properties.get("audiences"):
        form["audience"] = list(properties["audiences"])  # repeated parameter, as RFC 8693
    client_id = _required(auth, properties, "clientId")
    headers: dict[str, str] = {}
    metadata = properties.get("metadata") or {}
    if isinstance(metadata, Mapping) and metadata.get("clientAuthMethod") == "client_secret_post":
        form["client_id"] = client_id
        if properties.get("clientSecret"):
            form["client_secret"] = properties["clientSecret"]
    elif properties.get("clientSecret"):  # RFC 6749 §2.3.1: servers must support HTTP Basic
        encoded = base64.b64encode(f"{client_id}:{properties['clientSecret']}".encode()).decode()
        context.redactor.add(encoded)
        headers["Authorization"] = f"Basic {encoded}"
    else:
        form["client_id"] = client_id
    response = await send(context, f"auth '{auth.name}' token request", HttpRequest("post", url, headers=headers, form=form))
    body = decode_body(response)
    token = body.get("access_token") if isinstance(body, Mapping) else None
    if response.status_code != 200 or not isinstance(token, str):
        error = body.get("error") if isinstance(body, Mapping) else None
        raise WorkflowError(
            f"auth '{auth.name}': token request to {url} failed with HTTP {response.status_code}"
            + (f" ({error})" if isinstance(error, str) else ""),
            code=AUTH_ERROR, status=response.status_code,
        )
    expires_in = body.get("expires_in")
    return token, float(expires_in) if isinstance(expires_in, (int, float)) else None


def _token_key(auth: AuthDef, properties: Mapping[str, Any]) -> tuple[Any, ...]:
    return (
        auth.name, properties.get("authority"), properties.get("clientId"), properties.get("grantType"),
        properties.get("username"), tuple(properties.get("scopes") or ()), tuple(properties.get("audiences") or ()),
    )


def _required(auth: AuthDef, properties: Mapping[str, Any], key: str) -> str:
    value = properties.get(key)
    if not isinstance(value, str) or not value:
        raise WorkflowError(f"auth '{auth.name}' ({auth.scheme}) needs a non-empty '{key}'", code=AUTH_ERROR)
    return value


def _evaluate(value: Any, variables: Mapping[str, Any]) -> Any:
    if is_expression(value):
        return compile_expression(value).evaluate({}, variables)
    if isinstance(value, list):
        return [_evaluate(item, variables) for item in value]
    if isinstance(value, Mapping):
        return {key: _evaluate(item, variables) for key, item in value.items()}
    return value
