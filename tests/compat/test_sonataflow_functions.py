"""SonataFlow's custom function conventions (specs/compat-sonataflow.md §3, §5), against a real
HTTP server on 127.0.0.1 for ``rest:METHOD:URL``."""

from __future__ import annotations

import logging
from typing import AsyncIterator, Iterator

import pytest

from tests.functions.server import RecordingServer, Reply
from xflow_runtime.definition import load_workflow
from xflow_runtime.engine.inprocess import run_workflow
from xflow_runtime.errors import WorkflowError
from xflow_runtime.functions import FunctionContext, FunctionRegistry, HttpSettings, invoke_function
from xflow_runtime.plan.functions import FunctionDef


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    running = RecordingServer().start()
    yield running
    running.stop()


@pytest.fixture
async def context() -> AsyncIterator[FunctionContext]:
    ctx = FunctionContext(http=HttpSettings(timeout=5.0, connect_timeout=2.0), secrets={"TOKEN": "s3cr3t-value"})
    yield ctx
    await ctx.aclose()


def custom(name: str, operation: str, **metadata: str) -> FunctionDef:
    return FunctionDef(name=name, type="custom", operation=operation, metadata=dict(metadata))


async def test_sysout_logs_the_message_at_the_level_and_returns_nothing(context, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="xflow_runtime.sysout")
    assert await invoke_function(custom("say", "sysout"), {"message": "hello"}, context=context) is None
    assert await invoke_function(custom("warn", "sysout:WARN"), {"a": 1, "b": [2]}, context=context) is None
    assert await invoke_function(custom("odd", "sysout:nonsense"), "s3cr3t-value leaked?", context=context) is None
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", "hello"), ("WARNING", '{"a":1,"b":[2]}'), ("INFO", "*** leaked?")]


async def test_sysout_leaves_the_state_data_unchanged_in_a_workflow(caplog) -> None:
    caplog.set_level(logging.INFO, logger="xflow_runtime.sysout")
    text = """
id: say
specVersion: "0.8"
functions: [{name: log, type: custom, operation: "sysout:INFO"}]
states:
  - name: Say
    type: operation
    actions: [{functionRef: {refName: log, arguments: {message: "${ \\"hi \\" + .name }"}}}]
    end: true
"""
    result = await run_workflow(load_workflow(text).plan, {"name": "Ada"})
    assert result.output == {"name": "Ada"}
    assert [r.getMessage() for r in caplog.records if r.name == "xflow_runtime.sysout"] == ["hi Ada"]


async def test_rest_method_url_relative_with_base_url(server, context) -> None:
    server.route("POST", "/publish/odd/7", lambda r: Reply(200, {"got": r.json()}))
    fn = custom("publish", "rest:post:/publish/{type}/{number}", baseUrl=server.url)
    result = await invoke_function(fn, {"type": "odd", "number": 7, "note": "x"}, context=context)
    assert result == {"got": {"note": "x"}}
    assert [(r.method, r.path) for r in server.requests] == [("POST", "/publish/odd/7")]


async def test_rest_method_url_absolute_get_puts_the_rest_in_the_query(server, context) -> None:
    server.route("GET", "/numbers/random", Reply(200, {"value": 4}))
    fn = custom("random", f"rest:GET:{server.url}/numbers/random")
    assert await invoke_function(fn, {"max": 10}, context=context) == {"value": 4}
    assert server.requests[0].query == [("max", "10")]


async def test_rest_method_url_relative_without_a_base_is_a_configuration_error(context) -> None:
    with pytest.raises(WorkflowError) as raised:
        await invoke_function(custom("random", "rest:get:/numbers/random"), None, context=context)
    assert raised.value.code == "ConfigurationError"
    with pytest.raises(WorkflowError) as malformed:
        await invoke_function(custom("bad", "rest:fetch:/x"), None, context=context)
    assert malformed.value.code == "FunctionNotFound" and "rest:METHOD:URL" in str(malformed.value)


@pytest.mark.parametrize("operation", ["service:java:org.acme.EvenService::isEven", "camel:direct:numberToWords",
                                       "dmn", "knative:services.v1.serving.knative.dev/custom-function",
                                       "script:python", "rpc:division"])
async def test_jvm_only_operation_is_function_not_found_naming_the_operation(context, operation) -> None:
    with pytest.raises(WorkflowError) as raised:
        await invoke_function(custom("isEven", operation), {"number": 3}, context=context)
    assert raised.value.code == "FunctionNotFound"
    assert repr(operation) in str(raised.value)
    assert "register a callable under the function name 'isEven'" in str(raised.value)


async def test_a_registered_python_implementation_replaces_the_jvm_one() -> None:
    registry = FunctionRegistry()
    def is_even(*, number: int) -> dict[str, bool]:  # keyword-only: receives the member (specs/functions.md §3)
        return {"even": number % 2 == 0}

    registry.register("isEven", is_even)
    async with FunctionContext(registry=registry) as context:
        fn = custom("isEven", "service:java:org.acme.EvenService::isEven")
        assert await invoke_function(fn, {"number": 4}, context=context) == {"even": True}
