"""Function effects through the whole pipeline: plan compiler → interpreter → invoke_function."""

from tests.functions.server import Reply
from xflow_runtime.engine.inprocess import run_workflow
from xflow_runtime.plan.compile import compile_plan


def workflow(server_url: str) -> dict:
    return {
        "id": "users", "version": "1", "specVersion": "0.8", "start": "Create",
        "secrets": ["API_TOKEN"],
        "auth": [{"name": "api", "scheme": "bearer", "properties": {"token": "${ $SECRETS.API_TOKEN }"}}],
        "errors": [{"name": "NotFound", "code": "404"}],
        "functions": [
            {"name": "createUser", "type": "rest", "authRef": "api", "metadata": {"baseUrl": server_url},
             "operation": {"/users": {"post": {"requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}}}}}},
            {"name": "getUser", "type": "rest", "metadata": {"baseUrl": server_url},
             "operation": {"/users": {"get": {"parameters": [{"name": "id", "in": "path", "required": True}]}}}},
            {"name": "pet", "type": "graphql", "operation": f"{server_url}/graphql#query#pet"},
        ],
        "states": [
            {"name": "Create", "type": "operation",
             "actions": [{"functionRef": "createUser",
                          "actionDataFilter": {"fromStateData": "${ .user }", "toStateData": "${ .created }"}}],
             "transition": "Pet"},
            {"name": "Pet", "type": "operation",
             "actions": [{"functionRef": {"refName": "pet", "arguments": {"id": "${ .created.petId }"},
                                          "selectionSet": "{ ${ .fields } }"},
                          "actionDataFilter": {"results": "${ .pet }", "toStateData": "${ .pet }"}}],
             "transition": "Lookup"},
            {"name": "Lookup", "type": "operation",
             "actions": [{"functionRef": {"refName": "getUser", "arguments": {"id": "missing"}}}],
             "onErrors": [{"errorRef": "NotFound", "transition": "Missing"}],
             "end": True},
            {"name": "Missing", "type": "inject", "data": {"lookup": "not found"}, "end": True},
        ],
    }


async def test_rest_graphql_auth_and_error_codes_inside_a_workflow(server):
    server.route("POST", "/users", lambda r: Reply(201, {"id": "u1", "petId": 42, "echo": r.json()}))
    server.route("POST", "/graphql", lambda r: Reply(200, {"data": {"pet": {"name": "Rex", "query": r.json()["query"]}}}))
    server.route("GET", "/users/missing", Reply(404, {"detail": "no such user"}))
    plan = compile_plan(workflow(server.url))
    result = await run_workflow(plan, {"user": {"name": "Ada"}, "fields": "name"}, secrets={"API_TOKEN": "tkn-123"},
                                virtual_time=False)
    assert result.status == "completed", result.error
    assert result.output["created"] == {"id": "u1", "petId": 42, "echo": {"name": "Ada"}}
    assert result.output["pet"] == {"name": "Rex", "query": "query { pet(id: 42) { name } }"}
    assert result.output["lookup"] == "not found"
    create = server.only("POST", "/users")[0]
    assert create.headers["authorization"] == "Bearer tkn-123"
