import base64
import logging

import pytest

from tests.functions.server import Recorded, Reply
from xflow_runtime.errors import WorkflowError
from xflow_runtime.functions import FunctionContext, HttpSettings, invoke_function
from xflow_runtime.plan.functions import compile_function_def

SECRETS = {"API_USER": "svc-user", "API_PASSWORD": "pa55-w0rd-S3CRET", "TOKEN": "tok-S3CRET-bearer",
           "CLIENT_SECRET": "client-S3CRET-value"}


def protected(server, auth: dict, operation=None):
    operation = operation or {"/data": {"get": {}}}
    raw = {"name": "fetchData", "type": "rest", "operation": operation, "authRef": auth["name"],
           "metadata": {"baseUrl": server.url}}
    return compile_function_def(raw, {auth["name"]: auth}, None)


@pytest.fixture
async def secret_context():
    ctx = FunctionContext(secrets=SECRETS, constants={"client": "my-client"}, http=HttpSettings(timeout=5))
    yield ctx
    await ctx.aclose()


async def test_basic_auth_from_secrets(server, secret_context):
    server.route("GET", "/data", Reply(200, {"ok": 1}))
    auth = {"name": "basicAuth", "scheme": "basic",
            "properties": {"username": "${ $SECRETS.API_USER }", "password": "${ $SECRETS.API_PASSWORD }"}}
    assert await invoke_function(protected(server, auth), None, context=secret_context) == {"ok": 1}
    expected = base64.b64encode(b"svc-user:pa55-w0rd-S3CRET").decode()
    assert server.requests[0].headers["authorization"] == f"Basic {expected}"


async def test_scheme_defaults_to_basic_and_literal_values_are_used_as_written(server, secret_context):
    server.route("GET", "/data", Reply(200, {}))
    auth = {"name": "plain", "properties": {"username": "u", "password": "p"}}
    await invoke_function(protected(server, auth), None, context=secret_context)
    assert server.requests[0].headers["authorization"] == "Basic " + base64.b64encode(b"u:p").decode()


async def test_bearer_token(server, secret_context):
    server.route("GET", "/data", Reply(200, {}))
    auth = {"name": "bearerAuth", "scheme": "bearer", "properties": {"token": "${ $SECRETS.TOKEN }"}}
    await invoke_function(protected(server, auth), None, context=secret_context)
    assert server.requests[0].headers["authorization"] == "Bearer tok-S3CRET-bearer"


async def test_properties_as_one_expression(server):
    server.route("GET", "/data", Reply(200, {}))
    ctx = FunctionContext(secrets={"bearerProps": {"token": "whole-object-token"}})
    auth = {"name": "fromSecret", "scheme": "bearer", "properties": "${ $SECRETS.bearerProps }"}
    try:
        await invoke_function(protected(server, auth), None, context=ctx)
    finally:
        await ctx.aclose()
    assert server.requests[0].headers["authorization"] == "Bearer whole-object-token"


async def test_missing_secret_is_an_auth_error(server, secret_context):
    auth = {"name": "bearerAuth", "scheme": "bearer", "properties": {"token": "${ $SECRETS.NOPE }"}}
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(protected(server, auth), None, context=secret_context)
    assert caught.value.code == "AuthError"
    assert server.requests == []


def token_endpoint(tokens: list[str], expires_in=3600):
    issued = iter(tokens)

    def reply(request: Recorded) -> Reply:
        return Reply(200, {"access_token": next(issued), "token_type": "Bearer", "expires_in": expires_in})

    return reply


def oauth(server, authority_path="/oauth/token", **extra):
    properties = {"authority": server.url + authority_path, "grantType": "clientCredentials",
                  "clientId": "${ $CONST.client }", "clientSecret": "${ $SECRETS.CLIENT_SECRET }",
                  "scopes": ["read", "write"], **extra}
    return {"name": "oauth", "scheme": "oauth2", "properties": properties}


async def test_oauth2_client_credentials_token_fetched_once_and_reused(server, secret_context):
    server.route("POST", "/oauth/token", token_endpoint(["access-1", "access-2"]))
    server.route("GET", "/data", Reply(200, {"ok": True}))
    fn = protected(server, oauth(server))
    for _ in range(3):
        assert await invoke_function(fn, None, context=secret_context) == {"ok": True}
    token_requests = server.only("POST", "/oauth/token")
    assert len(token_requests) == 1
    form = token_requests[0].form()
    assert form == {"grant_type": ["client_credentials"], "scope": ["read write"]}
    client = base64.b64encode(b"my-client:client-S3CRET-value").decode()
    assert token_requests[0].headers["authorization"] == f"Basic {client}"
    assert [r.headers["authorization"] for r in server.only("GET", "/data")] == ["Bearer access-1"] * 3


async def test_oauth2_client_secret_post_and_audiences(server, secret_context):
    server.route("POST", "/oauth/token", token_endpoint(["access-1"]))
    server.route("GET", "/data", Reply(200, {}))
    auth = oauth(server, audiences=["api-a", "api-b"], metadata={"clientAuthMethod": "client_secret_post"})
    await invoke_function(protected(server, auth), None, context=secret_context)
    request = server.only("POST", "/oauth/token")[0]
    assert "authorization" not in request.headers
    assert request.form()["client_id"] == ["my-client"]
    assert request.form()["client_secret"] == ["client-S3CRET-value"]
    assert request.form()["audience"] == ["api-a", "api-b"]


async def test_expired_token_is_fetched_again(server, secret_context):
    server.route("POST", "/oauth/token", token_endpoint(["access-1", "access-2"], expires_in=0))
    server.route("GET", "/data", Reply(200, {}))
    fn = protected(server, oauth(server))
    await invoke_function(fn, None, context=secret_context)
    await invoke_function(fn, None, context=secret_context)
    assert [r.headers["authorization"] for r in server.only("GET", "/data")] == ["Bearer access-1", "Bearer access-2"]


async def test_401_with_cached_token_refreshes_once_and_retries(server, secret_context):
    server.route("POST", "/oauth/token", token_endpoint(["stale", "fresh"]))
    server.route("GET", "/data", lambda r: Reply(200, {"ok": 1}) if r.headers["authorization"] == "Bearer fresh" else Reply(401))
    assert await invoke_function(protected(server, oauth(server)), None, context=secret_context) == {"ok": 1}
    assert len(server.only("POST", "/oauth/token")) == 2


async def test_authority_without_token_path_uses_openid_discovery(server, secret_context):
    server.route("GET", "/realms/x/.well-known/openid-configuration",
                 Reply(200, {"issuer": server.url + "/realms/x", "token_endpoint": server.url + "/realms/x/protocol/token"}))
    server.route("POST", "/realms/x/protocol/token", token_endpoint(["access-d"]))
    server.route("GET", "/data", Reply(200, {}))
    await invoke_function(protected(server, oauth(server, authority_path="/realms/x/")), None, context=secret_context)
    assert server.only("GET", "/data")[0].headers["authorization"] == "Bearer access-d"


async def test_token_endpoint_refusal_is_auth_error(server, secret_context):
    server.route("POST", "/oauth/token", Reply(401, {"error": "invalid_client"}))
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(protected(server, oauth(server)), None, context=secret_context)
    assert (caught.value.code, caught.value.status) == ("AuthError", 401)
    assert "invalid_client" in str(caught.value)


async def test_unsupported_grant_is_auth_error(server, secret_context):
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(protected(server, oauth(server, grantType="tokenExchange")), None, context=secret_context)
    assert caught.value.code == "AuthError"


async def test_auth_also_protects_the_openapi_document_fetch(server, secret_context):
    document = {"openapi": "3.0.0", "servers": [{"url": server.url}], "paths": {"/data": {"get": {"operationId": "data"}}}}
    server.route("GET", "/openapi.json", lambda r: Reply(200, document) if "authorization" in r.headers else Reply(401))
    server.route("GET", "/data", Reply(200, {"ok": 1}))
    auth = {"name": "bearerAuth", "scheme": "bearer", "properties": {"token": "${ $SECRETS.TOKEN }"}}
    fn = protected(server, auth, operation=f"{server.url}/openapi.json#data")
    assert await invoke_function(fn, None, context=secret_context) == {"ok": 1}
    assert server.only("GET", "/openapi.json")[0].headers["authorization"] == "Bearer tok-S3CRET-bearer"


async def test_secrets_and_tokens_never_reach_logs_or_errors(server, secret_context, caplog):
    caplog.set_level(logging.DEBUG)  # every logger, httpx and httpcore included
    server.route("POST", "/oauth/token", token_endpoint(["issued-S3CRET-token"]))
    # The server echoes the credentials it received in an error body.
    server.route("GET", "/data", lambda r: Reply(403, {"youSent": r.headers["authorization"], "q": r.query}))
    operation = {"/data": {"get": {"parameters": [{"name": "key", "in": "query"}]}}}
    fn = protected(server, oauth(server), operation=operation)
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(fn, {"key": SECRETS["API_PASSWORD"]}, context=secret_context)
    assert caught.value.code == "403"
    visible = caplog.text + str(caught.value) + repr(caught.value.details)
    assert "GET" in caplog.text  # the calls were logged…
    for secret in [*SECRETS.values(), "issued-S3CRET-token",
                   base64.b64encode(b"my-client:client-S3CRET-value").decode()]:
        assert secret not in visible  # …without any credential
    assert "***" in repr(caught.value.details)
