import asyncio
import threading

import pytest

from xflow_runtime.errors import WorkflowError
from xflow_runtime.functions import FunctionContext, FunctionRegistry, invoke_function
from xflow_runtime.plan.functions import compile_function_def

MODULE = "python:tests.functions.sample_functions"


def custom(name: str, operation: str):
    return compile_function_def({"name": name, "type": "custom", "operation": operation}, {}, None)


async def test_sync_function_gets_keyword_arguments_and_runs_off_the_event_loop(context):
    result = await invoke_function(custom("add", f"{MODULE}:add"), {"a": 2, "b": 3}, context=context)
    assert result["sum"] == 5
    assert result["thread"] != threading.current_thread().name


async def test_async_function_is_awaited(context):
    assert await invoke_function(custom("echo", f"{MODULE}:slow_echo"), {"value": "hi"}, context=context) == {"echo": "hi"}


async def test_one_parameter_receives_the_arguments_whole_whatever_their_type(context):
    fn = custom("whole", f"{MODULE}:whole")
    assert await invoke_function(fn, [1, 2], context=context) == {"got": [1, 2]}
    assert await invoke_function(fn, "text", context=context) == {"got": "text"}
    assert await invoke_function(fn, {"payload": 1}, context=context) == {"got": {"payload": 1}}
    assert await invoke_function(fn, {"first-name": "Ada"}, context=context) == {"got": {"first-name": "Ada"}}
    assert await invoke_function(fn, None, context=context) == {"got": None}


async def test_keyword_parameters_receive_the_members_whatever_the_keys(context):
    fn = custom("everything", f"{MODULE}:everything")
    assert await invoke_function(fn, {"first-name": "Ada", "x": 1}, context=context) == {
        "members": {"first-name": "Ada", "x": 1}}
    assert await invoke_function(fn, None, context=context) == {"members": {}}
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(fn, [1, 2], context=context)
    assert caught.value.code == "InvalidArguments" and "must be an object" in str(caught.value)


async def test_no_parameters_are_called_with_nothing(context):
    assert await invoke_function(custom("n", f"{MODULE}:nothing"), None, context=context) == "called without arguments"
    assert await invoke_function(custom("n", f"{MODULE}:nothing"), {"a": 1}, context=context) == "called without arguments"


async def test_dotted_attribute_path(context):
    assert await invoke_function(custom("g", f"{MODULE}:Greeter.hello"), {"name": "Ada"}, context=context) == "hello Ada"


async def test_exception_becomes_workflow_error_coded_by_class_name(context):
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(custom("charge", f"{MODULE}:charge"), {"amount": 7}, context=context)
    assert caught.value.code == "InsufficientFunds"
    assert "cannot charge 7" in str(caught.value)


async def test_wrong_arguments_are_a_type_error_workflow_error(context):
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(custom("add", f"{MODULE}:add"), {"a": 1}, context=context)
    assert caught.value.code == "TypeError"


async def test_workflow_error_from_user_code_passes_unchanged(context):
    registry = FunctionRegistry()

    def refuse() -> None:
        raise WorkflowError("no stock", name="OutOfStock", code="409")

    registry.register("reserve", refuse)
    ctx = FunctionContext(registry=registry)
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(custom("reserve", "anything"), None, context=ctx)
    assert (caught.value.name, caught.value.code) == ("OutOfStock", "409")


@pytest.mark.parametrize("operation, fragment", [
    ("python:tests.functions.no_such_module:f", "cannot import module"),
    (f"{MODULE}:missing", "has no attribute"),
    (f"{MODULE}:NOT_CALLABLE", "is not callable"),
    ("run-my-script.sh", "nothing is registered"),
])
async def test_unresolvable_operation_is_function_not_found(context, operation, fragment):
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(custom("f", operation), None, context=context)
    assert caught.value.code == "FunctionNotFound"
    assert fragment in str(caught.value)


async def test_non_json_result_is_rejected(context):
    with pytest.raises(WorkflowError) as caught:
        await invoke_function(custom("s", f"{MODULE}:returns_set"), None, context=context)
    assert caught.value.code == "InvalidResult"


async def test_registry_by_function_name_wins_over_import():
    registry = FunctionRegistry()
    registry.register("add", lambda a, b: {"sum": a * b})
    ctx = FunctionContext(registry=registry)
    assert await invoke_function(custom("add", f"{MODULE}:add"), {"a": 2, "b": 3}, context=ctx) == {"sum": 6}


async def test_registry_by_operation_string_and_decorator():
    registry = FunctionRegistry()

    @registry.register("builtin:greet")
    async def greet(*, name: str) -> str:
        return f"hi {name}"

    ctx = FunctionContext(registry=registry)
    assert await invoke_function(custom("anyName", "builtin:greet"), {"name": "Bo"}, context=ctx) == "hi Bo"
    assert greet.__name__ == "greet"  # the decorator returns the function itself


async def test_name_registration_beats_operation_registration():
    registry = FunctionRegistry()
    registry.register("op", lambda: "by operation")
    registry.register("fn", lambda: "by name")
    assert await invoke_function(custom("fn", "op"), None, context=FunctionContext(registry=registry)) == "by name"


def test_registry_rejects_bad_entries():
    registry = FunctionRegistry()
    with pytest.raises(TypeError):
        registry.register("x", 42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        registry.register("", print)


async def test_sync_functions_run_concurrently(context):
    """Two blocking calls overlap: each waits for the other, which only works off the loop."""
    barrier = threading.Barrier(2, timeout=5)
    registry = FunctionRegistry()
    registry.register("wait", lambda: barrier.wait() is not None)
    ctx = FunctionContext(registry=registry)
    fn = custom("wait", "wait")
    assert await asyncio.gather(invoke_function(fn, None, context=ctx), invoke_function(fn, None, context=ctx)) == [True, True]


async def test_unsupported_types_raise_clear_errors(context):
    for type_, operation in [("rpc", "x.proto#S#M"), ("asyncapi", "a.yaml#op"), ("odata", "http://h/svc#Set"),
                             ("expression", ".a")]:
        fn = compile_function_def({"name": "f", "type": type_, "operation": operation}, {}, None)
        with pytest.raises(WorkflowError) as caught:
            await invoke_function(fn, {}, context=context)
        assert caught.value.code == "NotSupported"
        assert type_ in str(caught.value)
