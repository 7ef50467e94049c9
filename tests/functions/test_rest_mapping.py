"""The pure argument → request mapping, with properties over generated arguments."""

from urllib.parse import parse_qsl, unquote

import pytest
from hypothesis import given, strategies as st

from xflow_runtime.functions.rest_mapping import ArgumentError, Parameter, RestOperation, map_arguments

names = st.from_regex(r"[a-z][a-zA-Z0-9_]{0,10}", fullmatch=True)
scalars = st.one_of(st.text(min_size=1, max_size=15), st.integers(-10**6, 10**6), st.booleans())
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
                           max_leaves=6)


def text_of(value):
    import json

    return value if isinstance(value, str) else json.dumps(value)


def query_pairs(request):
    return parse_qsl(request.query_string, keep_blank_values=True)


def cookie_pairs(request):
    return dict(unquote(piece).split("=", 1) for piece in request.cookies)


@st.composite
def operations_and_arguments(draw):
    method = draw(st.sampled_from(["get", "delete", "post", "put", "patch"]))
    declared = draw(st.lists(names, unique=True, max_size=6))
    locations = [draw(st.sampled_from(["path", "query", "header", "cookie"])) for _ in declared]
    parameters = tuple(Parameter(n, loc, required=loc == "path") for n, loc in zip(declared, locations))
    templated = [p.name for p in parameters if p.location == "path" and draw(st.booleans())]
    path = "/base" + "".join("/{" + n + "}" for n in templated)
    arguments = {p.name: draw(scalars) for p in parameters if p.location == "path" or draw(st.booleans())}
    for p in parameters:  # a line break in a header is refused (test below)
        if p.location == "header" and isinstance(arguments.get(p.name), str):
            arguments[p.name] = arguments[p.name].replace("\r", " ").replace("\n", " ")
    extra = draw(st.dictionaries(names.filter(lambda n: n not in declared), json_values, max_size=4))
    arguments.update(extra)
    has_body = draw(st.booleans())
    return RestOperation(method=method, path=path, parameters=parameters, has_request_body=has_body), arguments, extra


@given(operations_and_arguments())
def test_every_argument_lands_exactly_where_the_rules_say(case):
    operation, arguments, extra = case
    request = map_arguments(operation, arguments)
    by_location = {p.name: p.location for p in operation.parameters}
    segments = [unquote(s) for s in request.path.split("/")[2:]]
    path_values = [text_of(arguments[p.name]) for p in operation.parameters if p.location == "path"]
    assert sorted(segments) == sorted(path_values)  # every path value, each as exactly one segment
    for name, location in by_location.items():
        if name not in arguments or location == "path":
            continue
        expected = text_of(arguments[name])
        if location == "query":
            assert (name, expected) in query_pairs(request)
        elif location == "header":
            assert request.headers[name] == expected
        else:
            assert cookie_pairs(request)[name] == expected
    wants_body = operation.has_request_body or operation.method in ("post", "put", "patch")
    if wants_body:
        assert request.body == (extra if extra else None)
        assert request.has_body == bool(extra)
    else:
        assert not request.has_body
        # An empty array adds nothing (form style, explode): its key is absent.
        assert {key for key, _ in query_pairs(request)} - set(by_location) == {k for k, v in extra.items() if v != []}


@given(st.dictionaries(names, scalars, max_size=4))
def test_parameter_named_in_body_schema_stays_in_body(arguments):
    arguments = {"id": 5, **arguments}
    operation = RestOperation("put", "/items/{id}", (Parameter("id", "path", True),), has_request_body=True,
                              body_properties=frozenset({"id"}))
    request = map_arguments(operation, arguments)
    assert request.path == "/items/5"
    assert request.body == arguments


def test_null_arguments_are_left_out():
    operation = RestOperation("get", "/s", (Parameter("q", "query"),))
    assert map_arguments(operation, {"q": None, "other": None}).query == []


def test_undeclared_query_arguments_repeat_arrays_and_write_objects_as_json():
    operation = RestOperation("get", "/s")
    request = map_arguments(operation, {"tags": ["a", "b"], "filter": {"b": 1, "a": [True]}})
    assert query_pairs(request) == [("tags", "a"), ("tags", "b"), ("filter", '{"a":[true],"b":1}')]


def test_declared_object_in_query_is_exploded_and_nested_values_are_refused():
    operation = RestOperation("get", "/s", (Parameter("filter", "query"),))
    assert map_arguments(operation, {"filter": {"b": 1, "a": True}}).query == ["b=1", "a=true"]
    with pytest.raises(ArgumentError, match="nested"):
        map_arguments(operation, {"filter": {"a": [True]}})


def test_a_line_break_in_a_header_is_refused():
    with pytest.raises(ArgumentError, match="line break"):
        map_arguments(RestOperation("get", "/s", (Parameter("X-A", "header"),)), {"X-A": "a\r\nInjected: 1"})


def test_non_object_arguments_become_the_body_when_a_body_is_expected():
    operation = RestOperation("post", "/bulk", has_request_body=True)
    assert map_arguments(operation, [1, 2]).body == [1, 2]
    with pytest.raises(ArgumentError):
        map_arguments(RestOperation("get", "/x"), [1, 2])


def test_required_body_is_sent_even_when_empty():
    operation = RestOperation("post", "/ping", has_request_body=True, request_body_required=True)
    request = map_arguments(operation, {})
    assert (request.has_body, request.body) == (True, {})


@pytest.mark.parametrize("arguments", [{}, {"id": None}])
def test_missing_path_parameter_is_an_error(arguments):
    with pytest.raises(ArgumentError, match="id"):
        map_arguments(RestOperation("get", "/users/{id}"), arguments)
