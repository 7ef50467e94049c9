"""State handlers by state type. Extension states (``aiagent``) register theirs here.

A handler is ``async def handler(state, data, run, scope) -> (data, exit)``:

- ``state``: the compiled state (a :class:`~xflow_runtime.plan.states.State` subclass);
- ``data``: the state data, after ``stateDataFilter.input``;
- ``run``: the :class:`~xflow_runtime.interpreter.instance.Instance` (``run.port``,
  ``run.variables``, ``run.context``, ``run.record(...)``, ``run.run_actions(...)``…);
- ``scope``: the step-name prefix of this state visit; name steps ``f"{scope}/…"``.

It returns the state data before ``stateDataFilter.output`` and the exit to take, or ``None`` for
the state's own ``transition``/``end``. It raises to fail the state (``onErrors`` then applies).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable

if TYPE_CHECKING:
    from xflow_runtime.interpreter.instance import Instance
    from xflow_runtime.plan.model import Exit

#: The first parameter is the concrete State subclass the handler is registered for.
StateHandler = Callable[[Any, Any, "Instance", str], Awaitable[tuple[Any, "Exit | None"]]]

_HANDLERS: dict[str, StateHandler] = {}

#: Modules imported when a lookup misses, so their ``register_state_handler`` calls run (missing
#: ones are skipped): the agent's ``aiagent`` handler. A workflow without such states never pays
#: for importing them.
EXTENSION_MODULES: tuple[str, ...] = ("xflow_runtime.agent.handler", "xflow_runtime.usertask.handler",
                                     "xflow_runtime.agent.user_proxy", "xflow_runtime.agent.proxy")
_builtins_loaded = False
_extensions_loaded = False


def register_state_handler(type_name: str, handler: StateHandler) -> None:
    """Run states of ``type_name`` with ``handler`` (replaces an earlier registration)."""
    _HANDLERS[type_name] = handler


def state_handler(type_name: str) -> StateHandler | None:
    handler = _HANDLERS.get(type_name)
    if handler is not None:
        return handler
    global _builtins_loaded, _extensions_loaded
    if not _builtins_loaded:
        _builtins_loaded = True
        import xflow_runtime.interpreter.states  # noqa: F401  (registers the eight SW 0.8 types)
    elif not _extensions_loaded:
        _extensions_loaded = True
        _import_extensions()
    else:
        return None
    return state_handler(type_name)


def _import_extensions() -> None:
    import importlib

    for module in EXTENSION_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
