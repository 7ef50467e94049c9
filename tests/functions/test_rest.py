import json
import os

import pytest

from tests.functions.server import Reply
from xflow_runtime.errors import WorkflowError
from xflow_runtime.functions import FunctionContext, HttpSettings, invoke_function
from xflow_runtime.plan.functions import compile_function_def

HERE = os.path.dirname(__file__)


def rest(name, operation, metadata=None, base_dir=HERE):
    raw = {"name": name, "type": "rest", "operation": operation}
    if metadata:
        raw["metadata"] = metadata
    return compile_function_def(raw, {}, base_dir)


# --- xFlow inline Paths Object -------------------------------------------------------------

async def test_inline_get_appends_untemplated_path_parameter(server, context):
    server.route("GET", "/users/42", Reply(200, {"id": 42, "name": "Ada"}))
    fn = rest("queryUserById", {"/users": {"get": {"parameters": [{"name": "id", "in": "path", "required": True}]}}},
              {"baseUrl": server.url})
    assert await invoke_function(fn, {"id": 42}, context=context) == {"id": 42, "name": "Ada"}
    assert server.requests[0].path == "/users/42"


async def test_inline_post_sends_arguments_as_json_body(server, context):
    server.route("POST", "/users", Reply(201, {"id": "u1"}))
    body_schema = {"type": "object", "properties": {"name": {"type": "string"}, "email": {"type": "string"}}}
    fn = rest("createUser", {"/users": {"post": {"requestBody": {"content": {"application/json": {"schema": body_schema}}}}}},
              {"baseUrl": server.url + "/"})
    user = {"name": "Ada", "email": "ada@example.org", "tags": ["a"]}
    assert await invoke_function(fn, user, context=context) == {"id": "u1"}
    recorded = server.requests[0]
    assert recorded.json() == user
    assert recorded.headers["content-type"] == "application/json"


async def test_inline_templated_path_without_declared_parameter(server, context):
    server.route("DELETE", "/users/a%2Fb", Reply(204))
    fn = rest("del", {"/users/{id}": {"delete": {}}}, {"baseUrl": server.url})
    assert await invoke_function(fn, {"id": "a/b", "force": True}, context=context) is None
    assert server.requests[0].raw_path == "/users/a%2Fb"  # a value never adds a path segment
    assert server.requests[0].query == [("force", "true")]  # the rest of a DELETE goes to the query


async def test_text_response_is_returned_as_text(server, context):
    server.route("GET", "/ping", Reply(200, "pong"))
    assert await invoke_function(rest("ping", {"/ping": {"get": {}}}, {"baseUrl": server.url}), None, context=context) == "pong"


# --- SW 0.8 OpenAPI document form ------------------------------------------------------------

async def test_openapi_file_maps_path_query_header_and_cookie(server):
    server.route("GET", "/v1/pets/7", Reply(200, {"petId": 7}))
    ctx = FunctionContext(http=HttpSettings(base_urls={"getPet": server.url + "/v1"}))
    fn = rest("getPet", "openapi/pets.yaml#getPet")
    try:
        result = await invoke_function(
            fn, {"petId": 7, "verbose": True, "X-Trace": "t-1", "session": "s1", "extra": [1, 2]}, context=ctx,
        )
    finally:
        await ctx.aclose()
    assert result == {"petId": 7}
    recorded = server.requests[0]
    assert recorded.path == "/v1/pets/7"
    assert recorded.query == [("verbose", "true"), ("extra", "1"), ("extra", "2")]
    assert recorded.headers["x-trace"] == "t-1"
    assert recorded.headers["cookie"] == "session=s1"


async def test_openapi_request_body_keeps_parameters_named_in_the_body_schema(server, context):
    server.route("PUT", "/pets/7", Reply(200, {"ok": True}))
    fn = rest("updatePet", "file://openapi/pets.yaml#updatePet", {"baseUrl": server.url})
    await invoke_function(fn, {"petId": 7, "name": "Rex"}, context=context)
    assert server.requests[0].json() == {"petId": 7, "name": "Rex"}


async def test_required_query_parameter_missing_is_invalid_arguments(server, context):
    fn = rest("listPets", "openapi/pets.yaml#listPets", {"baseUrl": server.url})
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(fn, {"tag": "dog"}, context=context)
    assert caught.value.code == "InvalidArguments"
    assert "limit" in str(caught.value)
    assert server.requests == []  # nothing was sent


async def test_servers_from_the_document_are_used(server, context, tmp_path):
    document = {"openapi": "3.0.0", "servers": [{"url": server.url + "/api"}],
                "paths": {"/hello": {"get": {"operationId": "hello"}}}}
    (tmp_path / "api.json").write_text(json.dumps(document))
    server.route("GET", "/api/hello", Reply(200, {"hi": 1}))
    fn = compile_function_def({"name": "hello", "operation": "api.json#hello"}, {}, str(tmp_path))  # type defaults to rest
    assert await invoke_function(fn, None, context=context) == {"hi": 1}


async def test_openapi_document_fetched_over_http_and_cached(server, context):
    document = {"openapi": "3.0.0", "servers": [{"url": "/svc"}],
                "paths": {"/items": {"get": {"operationId": "items"}}}}
    server.route("GET", "/docs/openapi.json", Reply(200, document))
    server.route("GET", "/svc/items", Reply(200, [1, 2]))
    fn = rest("items", f"{server.url}/docs/openapi.json#items")
    assert await invoke_function(fn, None, context=context) == [1, 2]
    assert await invoke_function(fn, None, context=context) == [1, 2]
    assert len(server.only("GET", "/docs/openapi.json")) == 1  # relative server resolved against the doc URL


async def test_swagger_2_host_and_body_parameter(server, context, tmp_path):
    host = server.url.removeprefix("http://")
    document = {"swagger": "2.0", "host": host, "basePath": "/v2", "schemes": ["http"],
                "paths": {"/orders": {"post": {"operationId": "order", "parameters": [
                    {"name": "order", "in": "body", "schema": {"type": "object"}}, {"name": "dry", "in": "query"}]}}}}
    (tmp_path / "swagger.yaml").write_text(json.dumps(document))
    server.route("POST", "/v2/orders", Reply(200, {"placed": True}))
    fn = rest("order", "swagger.yaml#order", base_dir=str(tmp_path))
    await invoke_function(fn, {"order": {"sku": "x"}, "dry": False}, context=context)
    assert server.requests[0].json() == {"sku": "x"}
    assert server.requests[0].query == [("dry", "false")]


async def test_base_url_precedence(server, context):
    fn = rest("p", {"/p": {"get": {}}}, {"baseUrl": "http://metadata.invalid"})
    server.route("GET", "/p", Reply(200, {"from": "settings"}))
    ctx = FunctionContext(http=HttpSettings(base_urls={"p": server.url}, default_base_url="http://default.invalid"))
    try:
        assert await invoke_function(fn, None, context=ctx) == {"from": "settings"}
    finally:
        await ctx.aclose()
    ctx = FunctionContext(http=HttpSettings(default_base_url=server.url))
    try:
        assert await invoke_function(rest("p", {"/p": {"get": {}}}), None, context=ctx) == {"from": "settings"}
    finally:
        await ctx.aclose()


async def test_no_server_anywhere_is_a_configuration_error(context):
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(rest("p", {"/p": {"get": {}}}), None, context=context)
    assert caught.value.code == "ConfigurationError"


@pytest.mark.parametrize("operation, code", [
    ("openapi/pets.yaml#noSuchOperation", "FunctionNotFound"),
    ("openapi/missing.yaml#getPet", "ConfigurationError"),
])
async def test_bad_document_references(context, operation, code):
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(rest("f", operation, {"baseUrl": "http://x.invalid"}), {"petId": 1}, context=context)
    assert caught.value.code == code


# --- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("status", [404, 503, 400, 500])
async def test_non_2xx_status_becomes_code(server, context, status):
    server.route("GET", "/thing", Reply(status, {"detail": "nope"}))
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(rest("thing", {"/thing": {"get": {}}}, {"baseUrl": server.url}), None, context=context)
    error = caught.value
    assert (error.code, error.status) == (str(status), status)
    assert error.details == {"body": {"detail": "nope"}}
    assert f"HTTP {status}" in str(error)


async def test_connection_refused_is_connect_error(context, closed_port_url):
    fn = rest("down", {"/x": {"get": {}}}, {"baseUrl": closed_port_url})
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(fn, None, context=context)
    assert caught.value.code == "ConnectError"


async def test_slow_server_is_timeout(server):
    server.route("GET", "/slow", Reply(200, {}, delay=1.0))
    ctx = FunctionContext(http=HttpSettings(timeout=0.2))
    try:
        with pytest.raises(WorkflowError) as caught:
            await invoke_function(rest("slow", {"/slow": {"get": {}}}, {"baseUrl": server.url}), None, context=ctx)
    finally:
        await ctx.aclose()
    assert caught.value.code == "timeout"


async def test_per_function_timeout_overrides_the_default(server):
    server.route("GET", "/slow", Reply(200, {"late": True}, delay=0.5))
    ctx = FunctionContext(http=HttpSettings(timeout=5.0, timeouts={"impatient": 0.1}))
    try:
        with pytest.raises(WorkflowError) as caught:
            await invoke_function(rest("impatient", {"/slow": {"get": {}}}, {"baseUrl": server.url}), None, context=ctx)
        assert caught.value.code == "timeout"
        assert await invoke_function(rest("patient", {"/slow": {"get": {}}}, {"baseUrl": server.url}), None, context=ctx) == {"late": True}
    finally:
        await ctx.aclose()


async def test_one_client_is_shared_per_context(server, context):
    server.route("GET", "/a", Reply(200, {}))
    fn = rest("a", {"/a": {"get": {}}}, {"baseUrl": server.url})
    await invoke_function(fn, None, context=context)
    first = context.client()
    await invoke_function(fn, None, context=context)
    assert context.client() is first


@pytest.mark.parametrize("operation", [
    {"/p": {"get": {"parameters": [{"in": "query"}]}}},
    {"/p": {"get": {"parameters": {"name": "x"}}}},
    {"/p": {"get": "not an operation"}},
    {"/p": {"post": {"parameters": [{"name": "f", "in": "formData"}]}}},
    {"/p": {"get": {"parameters": [{"$ref": "other.yaml#/x"}]}}},
])
async def test_malformed_inline_operations_are_configuration_errors(context, operation):
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(rest("bad", operation, {"baseUrl": "http://x.invalid"}), {}, context=context)
    assert caught.value.code == "ConfigurationError"


async def test_unparsable_document_is_a_configuration_error(context, tmp_path):
    (tmp_path / "broken.yaml").write_text("paths: [unclosed")
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(rest("f", "broken.yaml#op", base_dir=str(tmp_path)), None, context=context)
    assert caught.value.code == "ConfigurationError"
    assert "does not parse" in str(caught.value)


def test_context_reused_from_successive_event_loops(server):
    """A runtime may call asyncio.run per workflow run while keeping one FunctionContext."""
    import asyncio

    server.route("GET", "/a", Reply(200, {"n": 1}))
    ctx = FunctionContext()
    fn = rest("a", {"/a": {"get": {}}}, {"baseUrl": server.url})
    assert asyncio.run(invoke_function(fn, None, context=ctx)) == {"n": 1}
    assert asyncio.run(invoke_function(fn, None, context=ctx)) == {"n": 1}
    asyncio.run(ctx.aclose())
