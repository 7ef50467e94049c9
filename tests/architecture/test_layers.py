"""The direction of imports (specs/architecture.md): a lower layer never imports a higher one.

Every ``import`` of the package is read with :mod:`ast` — at module level, inside functions and
under ``TYPE_CHECKING`` alike, since a lazy or typing-only import is a dependency all the same.
A state type's compiler and handler are named as text in ``xflow_runtime/state_types.py``; that
table is how plan and interpreter reach the layers above them without importing them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "xflow_runtime"

#: layer → the layers it must not import (each a subpackage or top-level module of xflow_runtime).
FORBIDDEN: dict[str, frozenset[str]] = {
    "plan": frozenset({"agent", "llm", "memory", "usertask", "runtime", "service", "cli"}),
    "interpreter": frozenset({"runtime", "service", "cli"}),
    "engine": frozenset({"runtime", "service", "cli"}),
    "memory": frozenset({"cli", "service"}),
    "expressions": frozenset({"plan", "interpreter", "engine", "runtime", "service", "cli"}),
    "definition": frozenset({"interpreter", "engine", "runtime", "service", "cli"}),
    "state_types": frozenset({"plan", "interpreter", "agent", "usertask", "runtime", "service", "cli"}),
    # effects and protocol clients: below the runtime and its interfaces
    "telemetry": frozenset({"agent", "mcp", "a2a", "usertask", "runtime", "service", "cli"}),
    "mcp": frozenset({"runtime", "service", "cli"}),
    "a2a": frozenset({"runtime", "service", "cli"}),
}


def imported_layers(source: str, module: str) -> list[tuple[int, str]]:
    """``(line, layer)`` for each import of an ``xflow_runtime`` module in ``source``, the text of
    the module named ``module`` (dotted; relative imports are resolved from it)."""
    package = module.split(".")[:-1]  # the package the module sits in (an __init__ sits in its own)
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                names = [".".join(base + ([node.module] if node.module else []))]
            else:
                names = [node.module or ""]
        else:
            continue
        for name in names:
            pieces = name.split(".")
            if pieces[0] == "xflow_runtime" and len(pieces) > 1:
                found.append((node.lineno, pieces[1]))
    return found


def layer_of(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        forbidden = FORBIDDEN.get(layer_of(path), frozenset())
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for line, target in imported_layers(path.read_text(encoding="utf-8"), module):
            if target in forbidden:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports xflow_runtime.{target}")
    return found


def test_no_lower_layer_imports_a_higher_one() -> None:
    assert violations() == []


@pytest.mark.parametrize("source, layer", [
    ("from xflow_runtime.agent.plan import AIAgentState\n", "agent"),
    ("def f():\n    import xflow_runtime.llm.client\n", "llm"),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from xflow_runtime.runtime import Runtime\n",
     "runtime"),
    ("from ..memory.chat import ChatMemory\n", "memory"),
    ("from . import builtin_states\n", "plan"),
])
def test_the_reader_sees_every_kind_of_import(source: str, layer: str) -> None:
    # so that the layer test cannot pass vacuously: module-level, lazy, typing-only and relative imports
    assert [target for _, target in imported_layers(source, "xflow_runtime.plan.probe")] == [layer]
