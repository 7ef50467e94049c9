"""Compilers by state type, read from the one table of state types (:mod:`xflow_runtime.state_types`).

A compiler receives the raw state (a dict), the :class:`~xflow_runtime.plan.compile.CompileContext`
of the workflow being compiled (``ctx.where`` is the state's JSON pointer, for messages) and the
common fields already compiled (as keyword arguments for a
:class:`~xflow_runtime.plan.states.State` subclass); it returns the state object::

    def compile_aiagent(raw, ctx, common) -> State:
        return AIAgentState(**common, agent_name=raw["agentName"], ...)

Our own state types are entries of :mod:`xflow_runtime.state_types`; an embedder adds one with
``register_state_compiler("mytype", compile_mytype)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, cast

from xflow_runtime import state_types

if TYPE_CHECKING:
    from xflow_runtime.plan.context import CompileContext
    from xflow_runtime.plan.states import State

StateCompiler = Callable[[dict[str, Any], "CompileContext", dict[str, Any]], "State"]


def register_state_compiler(type_name: str, compiler: StateCompiler) -> None:
    """Compile states of ``type_name`` with ``compiler`` (replaces an earlier registration)."""
    state_types.register(type_name, compiler=compiler)


def state_compiler(type_name: str) -> StateCompiler | None:
    return cast("StateCompiler | None", state_types.compiler(type_name))


def known_state_types() -> tuple[str, ...]:
    return state_types.known()
