import pytest

from xflow_runtime.errors import DefinitionError
from xflow_runtime.plan.functions import AuthDef, FunctionDef, compile_function_def

AUTHS = {"token": {"name": "token", "scheme": "bearer", "properties": {"token": "${ $SECRETS.T }"}}}


def test_defaults_and_resolved_auth():
    fn = compile_function_def({"name": "f", "operation": "api.yaml#op", "authRef": "token"}, AUTHS, "/defs")
    assert fn == FunctionDef(name="f", type="rest", operation="api.yaml#op",
                             auth=AuthDef("token", "bearer", {"token": "${ $SECRETS.T }"}), metadata={}, base_dir="/defs")


def test_inline_paths_operation_is_kept_as_object():
    operation = {"/users/{id}": {"get": {"parameters": [{"name": "id", "in": "path"}]}}}
    assert compile_function_def({"name": "u", "type": "rest", "operation": operation}, {}, None).operation == operation


def test_auth_scheme_defaults_to_basic():
    auths = {"b": {"name": "b", "properties": {"username": "u", "password": "p"}}}
    assert compile_function_def({"name": "f", "operation": "a#b", "authRef": "b"}, auths, None).auth.scheme == "basic"


@pytest.mark.parametrize("raw, fragment", [
    ({"operation": "a#b"}, "'name'"),
    ({"name": "f", "type": "soap", "operation": "x"}, "soap"),
    ({"name": "f", "operation": ""}, "non-empty string"),
    ({"name": "f", "operation": "no-hash.yaml"}, "#<operationId>"),
    ({"name": "f", "type": "graphql", "operation": "http://h/g#subscription#x"}, "query|mutation"),
    ({"name": "f", "type": "custom", "operation": "python:module_only"}, "python:package.module:function"),
    ({"name": "f", "operation": {"/a": {"get": {}}, "/b": {"get": {}}}}, "exactly one path"),
    ({"name": "f", "operation": {"a": {"get": {}}}}, "start with '/'"),
    ({"name": "f", "operation": {"/a": {"summary": "x"}}}, "exactly one HTTP method"),
    ({"name": "f", "operation": "a#b", "authRef": "missing"}, "names no auth"),
    ({"name": "f", "operation": "a#b", "metadata": "x"}, "metadata"),
])
def test_invalid_definitions_are_reported_clearly(raw, fragment):
    with pytest.raises(DefinitionError) as caught:
        compile_function_def(raw, AUTHS, None)
    assert fragment in str(caught.value)


@pytest.mark.parametrize("auth, fragment", [
    ({"name": "a", "scheme": "digest", "properties": {}}, "digest"),
    ({"name": "a", "scheme": "bearer", "properties": {"tok": "x"}}, "token"),
    ({"name": "a", "scheme": "oauth2", "properties": {"grantType": "clientCredentials"}}, "clientId"),
    ({"name": "a", "scheme": "basic"}, "properties"),
])
def test_invalid_auth_definitions(auth, fragment):
    with pytest.raises(DefinitionError) as caught:
        compile_function_def({"name": "f", "operation": "a#b", "authRef": "a"}, {"a": auth}, None)
    assert fragment in str(caught.value)
