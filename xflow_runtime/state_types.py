"""Every state type in one table: its name, the function that compiles it and the one that runs it.

Adding a state type is one :class:`StateType` entry below. Both halves are named as
``"module:function"`` and imported on first use, so this table imports nothing: the plan
(:mod:`xflow_runtime.plan.registry`) reads the compilers, the interpreter
(:mod:`xflow_runtime.interpreter.registry`) the handlers, and neither imports the layer of the
other — nor does a workflow without ``aiagent`` states ever import the agent.

- A compiler is ``(raw, ctx, common) -> State``: the raw state (a dict), the workflow's
  :class:`~xflow_runtime.plan.context.CompileContext` (``ctx.where`` is the state's JSON pointer)
  and the common fields already compiled, as keyword arguments for a
  :class:`~xflow_runtime.plan.states.State` subclass.
- A handler is ``async (state, data, run, scope) -> (data, exit)``
  (:data:`xflow_runtime.interpreter.registry.StateHandler`).

Embedders add types with ``plan.register_state_compiler`` and
``interpreter.register_state_handler`` (callables instead of names); see specs/semantics.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from importlib import import_module
from typing import Any, Callable, cast

@dataclass(frozen=True)
class StateType:
    """One state type. ``compiler`` and ``handler`` are callables or ``"module:function"``
    (imported on first use); ``None`` when that half is not known (yet)."""

    name: str
    compiler: Callable[..., Any] | str | None
    handler: Callable[..., Any] | str | None


def _builtin(name: str, module: str) -> StateType:
    return StateType(name, f"xflow_runtime.plan.builtin_states:{name}",
                     f"xflow_runtime.interpreter.states.{module}:{name}")


#: The eight Serverless Workflow 0.8 state types.
BUILTIN: tuple[StateType, ...] = (
    _builtin("operation", "basic"),
    _builtin("switch", "basic"),
    _builtin("sleep", "basic"),
    _builtin("inject", "basic"),
    _builtin("parallel", "fanout"),
    _builtin("foreach", "fanout"),
    _builtin("event", "events"),
    _builtin("callback", "events"),
)

#: Our extensions (specs/agent.md, specs/states-human.md).
EXTENSIONS: tuple[StateType, ...] = (
    StateType("aiagent", "xflow_runtime.agent.plan:compile_aiagent",
              "xflow_runtime.agent.handler:handle_aiagent"),
    StateType("aiagentproxy", "xflow_runtime.agent.proxy_plan:compile_agent_proxy",
              "xflow_runtime.agent.proxy:handle_agent_proxy"),
    StateType("userproxyagent", "xflow_runtime.agent.user_proxy_plan:compile_user_proxy",
              "xflow_runtime.agent.user_proxy:handle_user_proxy"),
    StateType("usertask", "xflow_runtime.usertask.plan:compile_usertask",
              "xflow_runtime.usertask.handler:handle_usertask"),
)

_TABLE: dict[str, StateType] = {entry.name: entry for entry in (*BUILTIN, *EXTENSIONS)}
#: Resolved callables by state type, one dict per half: a handler lookup per state visit is one dict read.
_COMPILERS: dict[str, Callable[..., Any]] = {}
_HANDLERS: dict[str, Callable[..., Any]] = {}


def register(name: str, *, compiler: Callable[..., Any] | None = None,
             handler: Callable[..., Any] | None = None) -> None:
    """Set the compiler and/or handler of ``name`` (a new type, or replacing one half of a known one)."""
    entry = _TABLE.get(name, StateType(name, None, None))
    if compiler is not None:
        entry = replace(entry, compiler=compiler)
        _COMPILERS.pop(name, None)
    if handler is not None:
        entry = replace(entry, handler=handler)
        _HANDLERS.pop(name, None)
    _TABLE[name] = entry


def compiler(name: str) -> Callable[..., Any] | None:
    return _COMPILERS.get(name) or _resolve(name, "compiler", _COMPILERS)


def handler(name: str) -> Callable[..., Any] | None:
    return _HANDLERS.get(name) or _resolve(name, "handler", _HANDLERS)


def known() -> tuple[str, ...]:
    """The names of the state types that can be compiled, sorted."""
    return tuple(sorted(name for name, entry in _TABLE.items() if entry.compiler is not None))


def _resolve(name: str, half: str, resolved: dict[str, Callable[..., Any]]) -> Callable[..., Any] | None:
    entry = _TABLE.get(name)
    ref = None if entry is None else getattr(entry, half)
    if ref is None:
        return None
    if isinstance(ref, str):
        module, _, attribute = ref.partition(":")
        ref = cast("Callable[..., Any]", getattr(import_module(module), attribute))
    resolved[name] = ref
    return ref
