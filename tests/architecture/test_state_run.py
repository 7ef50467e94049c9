"""State handlers of the extension types see their instance only through
:class:`~xflow_runtime.interpreter.state_run.StateRun` (specs/architecture.md, "The state-handler
seam"): what they use of ``run`` is read from their source with :mod:`ast`."""

from __future__ import annotations

import ast
from pathlib import Path

from xflow_runtime.interpreter.state_run import CacheKey, StateRun

PACKAGE = Path(__file__).resolve().parents[2] / "xflow_runtime"
HANDLER_PACKAGES = ("agent", "usertask", "mcp", "a2a")  # the handlers and what they call with run
MEMBERS = {name for name in dir(StateRun) if not name.startswith("_")}


def test_the_protocol_is_narrow() -> None:
    assert MEMBERS == {"port", "variables", "instance_id", "workflow_id", "root", "services", "inbox",
                       "record", "run_actions", "invoke", "run_subflow", "emit", "cached",
                       "plan", "secrets", "function_invoker", "telemetry"}


def uses_of_run(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` for every use of ``run``/``self.run`` beyond the protocol: an attribute it
    does not declare, or ``getattr``/``setattr``/``hasattr`` on it."""
    found: list[tuple[int, str]] = []

    def is_run(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id == "run") or (
            isinstance(node, ast.Attribute) and node.attr == "run"
            and isinstance(node.value, ast.Name) and node.value.id == "self")

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and is_run(node.value) and node.attr not in MEMBERS:
            found.append((node.lineno, f"run.{node.attr}"))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
                and node.args and is_run(node.args[0])):
            found.append((node.lineno, f"{node.func.id}(run, …)"))
    return sorted(found)


def test_extension_handlers_use_only_the_protocol() -> None:
    problems = []
    for package in HANDLER_PACKAGES:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            for line, what in uses_of_run(path.read_text(encoding="utf-8")):
                problems.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {what}")
    assert problems == []


def test_the_reader_finds_what_the_protocol_forbids() -> None:
    source = ("def f(run):\n    run.context.services\n    getattr(run, 'parent', None)\n"
              "    setattr(run, '_x', 1)\n    self.run.parent\n    run.port\n")
    assert uses_of_run(source) == [(2, "run.context"), (3, "getattr(run, …)"), (4, "setattr(run, …)"),
                                   (5, "run.parent")]


async def test_the_instance_provides_the_protocol_and_its_cache_makes_each_value_once() -> None:
    from xflow_runtime.interpreter import run_workflow
    from xflow_runtime.interpreter.registry import register_state_handler
    from xflow_runtime.plan import compile_plan, register_state_compiler
    from xflow_runtime.plan.states import State

    counter: CacheKey[list[str]] = CacheKey("test counter")
    made: list[int] = []

    async def count(state: State, data: dict, run: StateRun, scope: str):
        missing = [name for name in MEMBERS if not hasattr(run, name)]
        assert missing == []  # the instance handed to handlers provides the whole protocol
        seen = run.root.cached(counter, lambda: made.append(1) or [])
        seen.append(run.instance_id)
        return {**data, "seen": len(seen), "workflow": run.workflow_id, "tenant": run.services.identity.tenant}, None

    register_state_compiler("cache-test", lambda raw, ctx, common: State(**common))
    register_state_handler("cache-test", count)
    plan = compile_plan({"id": "cached", "specVersion": "0.8", "start": "a", "states": [
        {"name": "a", "type": "cache-test", "transition": "b"},
        {"name": "b", "type": "cache-test", "end": True}]})
    result = await run_workflow(plan, {})
    assert result.output == {"seen": 2, "workflow": "cached", "tenant": "default"}
    assert made == [1]


def test_instance_services_are_built_once_and_never_changed() -> None:
    import dataclasses

    import pytest

    from xflow_runtime.interpreter import InstanceServices

    services = InstanceServices.of({"llm": None})
    with pytest.raises(dataclasses.FrozenInstanceError):
        services.llm = object()  # type: ignore[misc]
