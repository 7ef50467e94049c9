"""One table of state types, ``xflow_runtime/state_types.py`` (specs/semantics.md): each entry names
the compiler and the handler of one type, both imported on first use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from xflow_runtime import state_types
from xflow_runtime.interpreter.registry import state_handler
from xflow_runtime.plan.registry import known_state_types, state_compiler

REPO = Path(__file__).resolve().parents[2]
SW08 = {"operation", "switch", "sleep", "inject", "parallel", "foreach", "event", "callback"}


def test_builtins_are_the_eight_sw_types_and_extensions_follow() -> None:
    assert {entry.name for entry in state_types.BUILTIN} == SW08
    assert {entry.name for entry in state_types.EXTENSIONS} == {"aiagent", "aiagentproxy", "userproxyagent",
                                                                "usertask"}
    assert set(known_state_types()) >= SW08 | {"aiagent", "usertask"}


def test_every_entry_names_a_compiler_and_a_handler_that_exist() -> None:
    for entry in (*state_types.BUILTIN, *state_types.EXTENSIONS):
        compiler, handler = state_compiler(entry.name), state_handler(entry.name)
        assert callable(compiler) and callable(handler), entry
        assert f"{compiler.__module__}:{compiler.__name__}" == entry.compiler
        assert f"{handler.__module__}:{handler.__name__}" == entry.handler


def test_an_unknown_type_has_neither_half() -> None:
    assert state_compiler("no-such-type") is None and state_handler("no-such-type") is None
    assert "no-such-type" not in known_state_types()


def test_registering_one_half_keeps_the_other() -> None:
    async def handler(state, data, run, scope):  # pragma: no cover - never run
        return data, None

    state_types.register("half-test", handler=handler)
    assert state_handler("half-test") is handler and state_compiler("half-test") is None
    assert "half-test" not in known_state_types()  # not compilable: not offered in messages
    original = state_handler("inject")
    try:
        state_types.register("inject", handler=handler)
        assert state_handler("inject") is handler and state_compiler("inject") is not None
    finally:
        state_types.register("inject", handler=original)


def test_a_workflow_without_agent_states_never_imports_the_agent() -> None:
    code = """
import sys
from xflow_runtime.plan import compile_plan
from xflow_runtime.interpreter import run_workflow_sync
plan = compile_plan({"id": "w", "specVersion": "0.8", "start": "a", "states": [
    {"name": "a", "type": "inject", "data": {"x": 1}, "transition": "b"},
    {"name": "b", "type": "switch", "dataConditions": [{"condition": "${ .x == 1 }", "end": True}],
     "defaultCondition": {"end": True}}]})
result = run_workflow_sync(plan, {})
assert result.output == {"x": 1}, result
print(sorted(m for m in sys.modules if m.startswith(("xflow_runtime.agent", "xflow_runtime.usertask",
                                                     "xflow_runtime.llm", "xflow_runtime.memory", "litellm"))))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
