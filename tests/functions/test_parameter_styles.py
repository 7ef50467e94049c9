"""Every row of OpenAPI's "Style Examples" table, sent to a real HTTP server on 127.0.0.1 that
records the raw request line and headers.

Expected strings: OpenAPI 3.1.1 §4.8.12.4 (Style Examples), with ``color`` = ``"blue"`` /
``["blue", "black", "brown"]`` / ``{"R": 100, "G": 200, "B": 150}``; ``""`` is the "empty" column.
``None`` marks the table's n/a: the call is refused (InvalidArguments) and nothing is sent.
"""

import json
from urllib.parse import unquote

import pytest
from hypothesis import given, strategies as st

from tests.functions.server import Reply
from xflow_runtime.errors import WorkflowError
from xflow_runtime.functions import invoke_function
from xflow_runtime.functions.parameter_styles import Style, StyleError, serialize_path, serialize_query
from xflow_runtime.plan.functions import compile_function_def

STRING, ARRAY, OBJECT = "blue", ["blue", "black", "brown"], {"R": 100, "G": 200, "B": 150}
VALUES = {"empty": "", "string": STRING, "array": ARRAY, "object": OBJECT}

#: (style, explode) → {value kind: rendering}; location-specific framing is added by the tests
TABLE = {
    ("matrix", False): {"empty": ";color", "string": ";color=blue", "array": ";color=blue,black,brown",
                        "object": ";color=R,100,G,200,B,150"},
    ("matrix", True): {"empty": ";color", "string": ";color=blue", "array": ";color=blue;color=black;color=brown",
                       "object": ";R=100;G=200;B=150"},
    ("label", False): {"empty": ".", "string": ".blue", "array": ".blue,black,brown", "object": ".R,100,G,200,B,150"},
    ("label", True): {"empty": ".", "string": ".blue", "array": ".blue.black.brown", "object": ".R=100.G=200.B=150"},
    ("simple", False): {"empty": "", "string": "blue", "array": "blue,black,brown", "object": "R,100,G,200,B,150"},
    ("simple", True): {"empty": "", "string": "blue", "array": "blue,black,brown", "object": "R=100,G=200,B=150"},
    ("form", False): {"empty": "color=", "string": "color=blue", "array": "color=blue,black,brown",
                      "object": "color=R,100,G,200,B,150"},
    ("form", True): {"empty": "color=", "string": "color=blue", "array": "color=blue&color=black&color=brown",
                     "object": "R=100&G=200&B=150"},
    ("spaceDelimited", False): {"empty": None, "string": None, "array": "color=blue%20black%20brown",
                                "object": "color=R%20100%20G%20200%20B%20150"},
    ("pipeDelimited", False): {"empty": None, "string": None, "array": "color=blue%7Cblack%7Cbrown",
                               "object": "color=R%7C100%7CG%7C200%7CB%7C150"},
    ("deepObject", True): {"empty": None, "string": None, "array": None,
                           "object": "color%5BR%5D=100&color%5BG%5D=200&color%5BB%5D=150"},
}
LOCATIONS = {"matrix": ["path"], "label": ["path"], "simple": ["path", "header"], "form": ["query", "cookie"],
             "spaceDelimited": ["query"], "pipeDelimited": ["query"], "deepObject": ["query"]}
CASES = [(style, explode, location, kind) for (style, explode) in TABLE for location in LOCATIONS[style]
         for kind in VALUES]


def _document(server_url, location, style, explode, extra=None):
    parameter = {"name": "color", "in": location, "style": style, "explode": explode, "required": True,
                 **(extra or {})}
    path = "/items{color}" if style in ("matrix", "label") else ("/items/{color}" if location == "path" else "/items")
    return {"openapi": "3.1.0", "info": {"title": "styles", "version": "1"}, "servers": [{"url": server_url}],
            "paths": {path: {"get": {"operationId": "getItems", "parameters": [parameter]}}}}


def _function(tmp_path, document):
    (tmp_path / "styles.json").write_text(json.dumps(document))
    return compile_function_def({"name": "getItems", "operation": "styles.json#getItems"}, {}, str(tmp_path))


@pytest.mark.parametrize("style, explode, location, kind", CASES,
                         ids=[f"{s}-{'explode' if e else 'flat'}-{loc}-{k}" for s, e, loc, k in CASES])
async def test_style_examples_row(server, context, tmp_path, style, explode, location, kind):
    server.route("GET", "*", Reply(200, {"ok": True}))
    fn = _function(tmp_path, _document(server.url, location, style, explode))
    expected = TABLE[(style, explode)][kind]
    if expected is None:
        with pytest.raises(WorkflowError) as caught:
            await invoke_function(fn, {"color": VALUES[kind]}, context=context)
        assert caught.value.code == "InvalidArguments"
        assert server.requests == []
        return
    assert await invoke_function(fn, {"color": VALUES[kind]}, context=context) == {"ok": True}
    recorded = server.requests[0]
    if location == "path":
        separator = "" if style in ("matrix", "label") else "/"
        assert recorded.request_line == f"GET /items{separator}{expected} HTTP/1.1"
    elif location == "query":
        assert recorded.request_line == f"GET /items?{expected} HTTP/1.1"
    elif location == "header":
        assert recorded.request_line == "GET /items HTTP/1.1"
        assert recorded.headers["color"] == expected
    else:  # cookie: form pairs, several joined as one Cookie header
        assert recorded.headers["cookie"] == expected.replace("&", "; ")


async def test_deep_object_is_the_same_whatever_explode_says(server, context, tmp_path):
    """deepObject's default explode is false (it is not form); the table has one rendering."""
    server.route("GET", "*", Reply(200, None))
    document = _document(server.url, "query", "deepObject", False)
    del document["paths"]["/items"]["get"]["parameters"][0]["explode"]
    await invoke_function(_function(tmp_path, document), {"color": OBJECT}, context=context)
    assert server.requests[0].request_line == f"GET /items?{TABLE[('deepObject', True)]['object']} HTTP/1.1"


async def test_allow_reserved_keeps_reserved_characters_in_query_values(server, context, tmp_path):
    server.route("GET", "*", Reply(200, None))
    value = "a/b?c:d@e,f;g=h#i j%41"
    plain = _function(tmp_path, _document(server.url, "query", "form", True))
    await invoke_function(plain, {"color": value}, context=context)
    reserved = _function(tmp_path, _document(server.url, "query", "form", True, {"allowReserved": True}))
    await invoke_function(reserved, {"color": value}, context=context)
    assert server.requests[0].request_line == "GET /items?color=a%2Fb%3Fc%3Ad%40e%2Cf%3Bg%3Dh%23i%20j%2541 HTTP/1.1"
    # '#' would end the URL and ' ' is not allowed: still encoded; "%41" is kept as a triple
    assert server.requests[1].request_line == "GET /items?color=a/b?c:d@e,f;g=h%23i%20j%41 HTTP/1.1"


async def test_a_delimiter_inside_a_value_is_encoded(server, context, tmp_path):
    server.route("GET", "*", Reply(200, None))
    fn = _function(tmp_path, _document(server.url, "query", "form", False))
    await invoke_function(fn, {"color": ["a,b", "c d"]}, context=context)
    assert server.requests[0].request_line == "GET /items?color=a%2Cb,c%20d HTTP/1.1"


async def test_content_parameter_is_sent_as_json(server, context, tmp_path):
    server.route("GET", "*", Reply(200, None))
    document = _document(server.url, "query", "form", True)
    parameter = document["paths"]["/items"]["get"]["parameters"][0]
    for key in ("style", "explode"):
        del parameter[key]
    parameter["content"] = {"application/json": {"schema": {"type": "object"}}}
    await invoke_function(_function(tmp_path, document), {"color": {"R": [1, 2]}}, context=context)
    assert server.requests[0].request_line == "GET /items?color=%7B%22R%22%3A%5B1%2C2%5D%7D HTTP/1.1"


@pytest.mark.parametrize("location, style, explode, message", [
    ("query", "spaceDelimited", True, "not defined"),
    ("query", "pipeDelimited", True, "not defined"),
    ("path", "form", True, "not allowed in path"),
    ("header", "label", False, "not allowed in header"),
    ("cookie", "deepObject", True, "not allowed in cookie"),
    ("query", "tabDelimited", False, "not allowed in query"),
])
async def test_undefined_styles_are_refused_before_anything_is_sent(server, context, tmp_path, location, style,
                                                                    explode, message):
    fn = _function(tmp_path, _document(server.url, location, style, explode))
    with pytest.raises(WorkflowError, match=message) as caught:
        await invoke_function(fn, {"color": ARRAY}, context=context)
    assert caught.value.code == "ConfigurationError"
    assert server.requests == []


@pytest.mark.parametrize("value", [[["nested"]], {"R": {"deep": 1}}])
async def test_nested_values_are_refused(server, context, tmp_path, value):
    fn = _function(tmp_path, _document(server.url, "query", "form", True))
    with pytest.raises(WorkflowError, match="nested") as caught:
        await invoke_function(fn, {"color": value}, context=context)
    assert caught.value.code == "InvalidArguments"


@pytest.mark.parametrize("collection_format, expected", [
    (None, "ids=1,2"), ("csv", "ids=1,2"), ("multi", "ids=1&ids=2"), ("ssv", "ids=1%202"), ("pipes", "ids=1%7C2"),
])
async def test_swagger_2_collection_formats(server, context, tmp_path, collection_format, expected):
    server.route("GET", "*", Reply(200, None))
    parameter = {"name": "ids", "in": "query", "type": "array", "items": {"type": "integer"}}
    if collection_format:
        parameter["collectionFormat"] = collection_format
    document = {"swagger": "2.0", "host": server.url.removeprefix("http://"), "schemes": ["http"],
                "paths": {"/items": {"get": {"operationId": "getItems", "parameters": [parameter]}}}}
    await invoke_function(_function(tmp_path, document), {"ids": [1, 2]}, context=context)
    assert server.requests[0].request_line == f"GET /items?{expected} HTTP/1.1"


# --- properties: a value's own characters never become delimiters ------------------------------

items = st.lists(st.text(max_size=8), min_size=1, max_size=4)
objects = st.dictionaries(st.text(min_size=1, max_size=6), st.text(max_size=6), min_size=1, max_size=3)


@given(items, st.sampled_from([("form", ","), ("spaceDelimited", "%20"), ("pipeDelimited", "%7C")]))
def test_delimited_query_values_split_back_into_their_items(values, style_and_separator):
    style, separator = style_and_separator
    if style != "form" and any(unquote(separator) in value for value in values):
        with pytest.raises(StyleError, match="could not be told apart"):
            serialize_query("k", values, Style(style, explode=False))
        return
    [piece] = serialize_query("k", values, Style(style, explode=False))
    key, _, raw = piece.partition("=")
    assert key == "k" and [unquote(part) for part in raw.split(separator)] == values


@given(objects, st.sampled_from(["simple", "label", "matrix"]), st.booleans())
def test_path_values_never_add_a_path_separator_and_objects_split_back(value, style, explode):
    text = serialize_path("p", value, Style(style, explode=explode))
    assert "/" not in text and "?" not in text and "#" not in text
    if style == "simple" and not explode:
        parts = [unquote(part) for part in text.split(",")]
        assert dict(zip(parts[::2], parts[1::2])) == value


@given(objects)
def test_deep_object_pairs_decode_to_the_object(value):
    pieces = serialize_query("f", value, Style("deepObject"))
    decoded = dict((unquote(k), unquote(v)) for k, _, v in (p.partition("=") for p in pieces))
    assert decoded == {f"f[{k}]": v for k, v in value.items()}
