import json

import pytest
from hypothesis import given, strategies as st

from tests.functions.server import Recorded, Reply
from xflow_runtime.errors import WorkflowError
from xflow_runtime.functions import FunctionContext, HttpSettings, invoke_function
from xflow_runtime.functions.graphql import build_document, to_literal
from xflow_runtime.plan.functions import compile_function_def


def graphql(name, operation, auth=None):
    raw = {"name": name, "type": "graphql", "operation": operation}
    auths = {}
    if auth:
        raw["authRef"] = auth["name"]
        auths = {auth["name"]: auth}
    return compile_function_def(raw, auths, None)


def pets_api(request: Recorded) -> Reply:
    query = request.json()["query"]
    if query.startswith("query { pet(id: 42)"):
        return Reply(200, {"data": {"pet": {"id": 42, "name": "Snuffles", "favoriteTreat": {"id": 9001}}}})
    if query.startswith("mutation { createPet("):
        return Reply(200, {"data": {"createPet": {"id": 43, "name": "Sadaharu"}}})
    return Reply(200, {"errors": [{"message": f"Cannot query: {query}"}], "data": None})


async def test_query_with_selection_set_is_keyed_by_field(server, context):
    server.route("POST", "/graphql", pets_api)
    fn = graphql("getOnePet", f"{server.url}/graphql#query#pet")
    result = await invoke_function(fn, {"id": 42}, selection_set="{ id, name, favoriteTreat { id } }", context=context)
    assert result == {"pet": {"id": 42, "name": "Snuffles", "favoriteTreat": {"id": 9001}}}
    request = server.requests[0]
    assert request.json() == {"query": "query { pet(id: 42) { id, name, favoriteTreat { id } } }"}
    assert request.headers["content-type"] == "application/json"


async def test_mutation_with_object_argument(server, context):
    server.route("POST", "/graphql", pets_api)
    fn = graphql("createPet", f"{server.url}/graphql#mutation#createPet")
    pet = {"id": 43, "name": "Sadaharu", "favoriteTreatId": 9001}
    result = await invoke_function(fn, {"pet": pet}, selection_set="id name", context=context)
    assert result == {"createPet": {"id": 43, "name": "Sadaharu"}}
    assert server.requests[0].json()["query"] == (
        'mutation { createPet(pet: {id: 43, name: "Sadaharu", favoriteTreatId: 9001}) { id name } }'
    )


async def test_graphql_errors_become_workflow_error(server, context):
    server.route("POST", "/graphql", pets_api)
    fn = graphql("getOnePet", f"{server.url}/graphql#query#pet")
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(fn, {"id": 1}, selection_set="{ id }", context=context)
    assert caught.value.code == "GraphQLError"
    assert "Cannot query" in str(caught.value)
    assert caught.value.details["errors"][0]["message"].startswith("Cannot query")


async def test_http_error_without_graphql_errors_keeps_status_code(server, context):
    server.route("POST", "/graphql", Reply(502, "bad gateway"))
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(graphql("p", f"{server.url}/graphql#query#pet"), {}, selection_set="{ id }", context=context)
    assert caught.value.code == "502"


async def test_endpoint_override_and_bearer_auth(server):
    server.route("POST", "/gql", lambda r: Reply(200, {"data": {"me": {"login": r.headers["authorization"]}}}))
    auth = {"name": "gh", "scheme": "bearer", "properties": {"token": "${ $SECRETS.GH }"}}
    fn = graphql("me", "https://api.invalid/graphql#query#me", auth)
    ctx = FunctionContext(secrets={"GH": "gh-token-1"}, http=HttpSettings(base_urls={"me": server.url + "/gql"}))
    try:
        assert await invoke_function(fn, None, selection_set="{ login }", context=ctx) == {"me": {"login": "Bearer gh-token-1"}}
    finally:
        await ctx.aclose()


def test_scalar_field_without_selection_set():
    assert build_document("query", "version", None, None) == "query { version }"


def test_invalid_argument_names_are_rejected():
    with pytest.raises(ValueError):
        build_document("query", "pet", {"bad-name": 1}, "{ id }")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True), inner, max_size=4),
    max_leaves=12,
)


def graphql_literal_to_json(text: str) -> str:
    """Quote the bare object keys of a GraphQL literal so json can read it back (test helper)."""
    import re

    out, i = [], 0
    in_string = False
    while i < len(text):
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\":
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        else:
            match = re.match(r"([A-Za-z_][A-Za-z0-9_]*): ", text[i:])
            if match and (not out or out[-1] in "{ ,"):
                out.append(f'"{match.group(1)}": ')
                i += len(match.group(0))
                continue
            out.append(ch)
        i += 1
    return "".join(out)


@given(json_values)
def test_literals_round_trip(value):
    assert json.loads(graphql_literal_to_json(to_literal(value))) == value


async def test_oauth2_token_refreshed_once_on_401(server):
    tokens = iter(["stale", "fresh"])
    server.route("POST", "/token", lambda r: Reply(200, {"access_token": next(tokens)}))  # no expires_in
    server.route("POST", "/graphql", lambda r: Reply(200, {"data": {"me": 1}}) if r.headers["authorization"] == "Bearer fresh"
                 else Reply(401, {"errors": [{"message": "expired"}]}))
    auth = {"name": "o", "scheme": "oauth2", "properties": {"authority": server.url + "/token",
                                                           "grantType": "clientCredentials", "clientId": "c"}}
    ctx = FunctionContext()
    try:
        assert await invoke_function(graphql("me", f"{server.url}/graphql#query#me", auth), None, context=ctx) == {"me": 1}
    finally:
        await ctx.aclose()
    assert server.only("POST", "/token")[1].form() == {"grant_type": ["client_credentials"], "client_id": ["c"]}
