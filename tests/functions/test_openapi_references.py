"""OpenAPI descriptions split across files (and across same-origin URLs), resolved with
``referencing``; what leaves the description's origin, or is too large, is refused."""

import json
import os

import pytest
import yaml

from tests.functions.server import Reply
from xflow_runtime.engine.inprocess import run_workflow
from xflow_runtime.errors import WorkflowError
from xflow_runtime.functions import invoke_function
from xflow_runtime.functions.openapi_refs import MAX_DOCUMENT_BYTES
from xflow_runtime.plan.compile import compile_plan
from xflow_runtime.plan.functions import compile_function_def


def write(path, content):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))


def split_description(root, server_url):
    """api/openapi.yaml → paths/items.yaml (a path item) → ../../shared/parameters.yaml (a styled
    parameter) and ../schemas/item.json (a body schema, itself referencing a sibling file)."""
    write(root / "api" / "openapi.yaml", {
        "openapi": "3.1.0", "info": {"title": "split", "version": "1"}, "servers": [{"url": server_url}],
        "paths": {"/items": {"$ref": "paths/items.yaml"}},
    })
    write(root / "api" / "paths" / "items.yaml", {
        "get": {"operationId": "listItems", "parameters": [{"$ref": "../../shared/parameters.yaml#/Ids"}]},
        "post": {"operationId": "createItem", "requestBody": {"required": True, "content": {
            "application/json": {"schema": {"$ref": "../schemas/item.json"}}}}},
    })
    write(root / "shared" / "parameters.yaml", {"Ids": {"name": "ids", "in": "query", "style": "form",
                                                         "explode": False, "schema": {"type": "array"}}})
    write(root / "api" / "schemas" / "item.json", json.dumps(
        {"type": "object", "properties": {"name": {"type": "string"}, "tags": {"$ref": "tags.json"}}}))
    write(root / "api" / "schemas" / "tags.json", json.dumps({"type": "array", "items": {"type": "string"}}))


def workflow():
    return {
        "id": "split", "version": "1", "specVersion": "0.8", "start": "Create",
        "functions": [{"name": "createItem", "operation": "api/openapi.yaml#createItem"},
                      {"name": "listItems", "operation": "api/openapi.yaml#listItems"}],
        "states": [
            {"name": "Create", "type": "operation",
             "actions": [{"functionRef": {"refName": "createItem", "arguments": {"name": "${ .name }"}},
                          "actionDataFilter": {"toStateData": "${ .created }"}}],
             "transition": "List"},
            {"name": "List", "type": "operation",
             "actions": [{"functionRef": {"refName": "listItems", "arguments": {"ids": "${ [.created.id, 7] }"}},
                          "actionDataFilter": {"toStateData": "${ .listed }"}}],
             "end": True},
        ],
    }


async def test_a_description_split_across_files_drives_a_workflow(server, tmp_path):
    split_description(tmp_path, server.url)
    server.route("POST", "/items", lambda r: Reply(201, {"id": 3, "echo": r.json()}))
    server.route("GET", "/items", Reply(200, [{"id": 3}, {"id": 7}]))
    plan = compile_plan(workflow(), base_dir=str(tmp_path))
    result = await run_workflow(plan, {"name": "pen"}, virtual_time=False)
    assert result.status == "completed", result.error
    assert result.output["created"] == {"id": 3, "echo": {"name": "pen"}}
    assert result.output["listed"] == [{"id": 3}, {"id": 7}]
    # the parameter from ../../shared/parameters.yaml kept its style (form, explode: false)
    assert server.only("GET", "/items")[0].request_line == "GET /items?ids=3,7 HTTP/1.1"


async def test_a_changed_referenced_file_is_read_again(server, context, tmp_path):
    split_description(tmp_path, server.url)
    server.route("GET", "/items", Reply(200, []))
    fn = compile_function_def({"name": "listItems", "operation": "api/openapi.yaml#listItems"}, {}, str(tmp_path))
    await invoke_function(fn, {"ids": [1, 2]}, context=context)
    parameters = tmp_path / "shared" / "parameters.yaml"
    write(parameters, {"Ids": {"name": "ids", "in": "query", "style": "pipeDelimited", "schema": {"type": "array"}}})
    os.utime(parameters, ns=(1, 1))  # a different mtime even on coarse clocks
    await invoke_function(fn, {"ids": [1, 2]}, context=context)
    assert [r.request_line for r in server.requests] == ["GET /items?ids=1,2 HTTP/1.1",
                                                         "GET /items?ids=1%7C2 HTTP/1.1"]


async def test_same_origin_references_of_a_fetched_description_are_fetched(server, context):
    server.route("GET", "/docs/openapi.json", Reply(200, {
        "openapi": "3.1.0", "servers": [{"url": "/svc"}],
        "paths": {"/items": {"get": {"operationId": "items", "parameters": [{"$ref": "common/params.json#/Q"}]}}}}))
    server.route("GET", "/docs/common/params.json", Reply(200, {"Q": {"name": "q", "in": "query"}}))
    server.route("GET", "/svc/items", Reply(200, [1]))
    fn = compile_function_def({"name": "items", "operation": f"{server.url}/docs/openapi.json#items"}, {}, None)
    assert await invoke_function(fn, {"q": "x y"}, context=context) == [1]
    assert server.only("GET", "/svc/items")[0].request_line == "GET /svc/items?q=x%20y HTTP/1.1"


async def test_another_origin_is_refused(server, context):
    server.route("GET", "/docs/openapi.json", Reply(200, {
        "openapi": "3.1.0", "servers": [{"url": "/svc"}],
        "paths": {"/items": {"get": {"operationId": "items",
                                     "parameters": [{"$ref": "http://elsewhere.invalid/p.json#/Q"}]}}}}))
    fn = compile_function_def({"name": "items", "operation": f"{server.url}/docs/openapi.json#items"}, {}, None)
    with pytest.raises(WorkflowError, match="same origin") as caught:
        await invoke_function(fn, {}, context=context)
    assert caught.value.code == "ConfigurationError"
    assert [r.path for r in server.requests] == ["/docs/openapi.json"]


@pytest.mark.parametrize("ref, message", [
    ("http://127.0.0.1:9/p.yaml#/Q", "no network"),
    ("missing.yaml#/Q", "cannot read"),
    ("#/components/parameters/Nowhere", "points at nothing"),
])
async def test_file_description_references_that_cannot_be_followed(context, tmp_path, ref, message):
    write(tmp_path / "openapi.yaml", {"openapi": "3.1.0", "servers": [{"url": "http://127.0.0.1:9"}],
                                      "paths": {"/x": {"get": {"operationId": "x", "parameters": [{"$ref": ref}]}}}})
    fn = compile_function_def({"name": "x", "operation": "openapi.yaml#x"}, {}, str(tmp_path))
    with pytest.raises(WorkflowError, match=message) as caught:
        await invoke_function(fn, {}, context=context)
    assert caught.value.code == "ConfigurationError"


async def test_an_oversized_referenced_document_is_refused(context, tmp_path):
    write(tmp_path / "openapi.yaml", {"openapi": "3.1.0", "servers": [{"url": "http://127.0.0.1:9"}],
                                      "paths": {"/x": {"get": {"operationId": "x",
                                                               "parameters": [{"$ref": "big.yaml#/Q"}]}}}})
    with open(tmp_path / "big.yaml", "w") as handle:
        handle.write("Q: {name: q, in: query}\n# " + "x" * MAX_DOCUMENT_BYTES + "\n")
    fn = compile_function_def({"name": "x", "operation": "openapi.yaml#x"}, {}, str(tmp_path))
    with pytest.raises(WorkflowError, match="larger than") as caught:
        await invoke_function(fn, {}, context=context)
    assert caught.value.code == "ConfigurationError"
