"""Extension point: compilers for state types the core does not know (``aiagent`` and friends).

A compiler receives the raw state (a dict), the :class:`~xflow_runtime.plan.compile.CompileContext`
of the workflow being compiled (``ctx.where`` is the state's JSON pointer, for messages) and the
common fields already compiled (as keyword arguments for a
:class:`~xflow_runtime.plan.states.State` subclass); it returns the state object::

    def compile_aiagent(raw, ctx, common) -> State:
        return AIAgentState(**common, agent_name=raw["agentName"], ...)

    register_state_compiler("aiagent", compile_aiagent)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from xflow_runtime.plan.compile import CompileContext
    from xflow_runtime.plan.states import State

StateCompiler = Callable[[dict, "CompileContext", dict[str, Any]], "State"]

_COMPILERS: dict[str, StateCompiler] = {}

#: Modules imported when a lookup misses, so that their ``register_state_compiler`` calls run. The
#: agent module registers ``aiagent`` and its stubs; missing modules are skipped.
EXTENSION_MODULES: tuple[str, ...] = ("xflow_runtime.agent.plan", "xflow_runtime.usertask.plan",
                                     "xflow_runtime.agent.user_proxy_plan", "xflow_runtime.agent.proxy_plan")
_extensions_loaded = False


def register_state_compiler(type_name: str, compiler: StateCompiler) -> None:
    """Compile states of ``type_name`` with ``compiler`` (replaces an earlier registration)."""
    _COMPILERS[type_name] = compiler


def state_compiler(type_name: str) -> StateCompiler | None:
    compiler = _COMPILERS.get(type_name)
    if compiler is None and not _extensions_loaded:  # only workflows using extension types pay
        _load_extensions()
        compiler = _COMPILERS.get(type_name)
    return compiler


def known_state_types() -> tuple[str, ...]:
    _load_extensions()
    return tuple(sorted(_COMPILERS))


def _load_extensions() -> None:
    global _extensions_loaded
    if _extensions_loaded:
        return
    _extensions_loaded = True
    import importlib

    for module in EXTENSION_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
