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

#: Modules imported on first lookup so their ``register_state_handler`` calls run (missing ones
#: are skipped): the built-in handlers and the agent helper's ``aiagent`` handler.
EXTENSION_MODULES: tuple[str, ...] = ("xflow_runtime.interpreter.states", "xflow_runtime.agent.handler")
_loaded = False


def register_state_handler(type_name: str, handler: StateHandler) -> None:
    """Run states of ``type_name`` with ``handler`` (replaces an earlier registration)."""
    _HANDLERS[type_name] = handler


def state_handler(type_name: str) -> StateHandler | None:
    if not _loaded:
        _load()
    return _HANDLERS.get(type_name)


def _load() -> None:
    global _loaded
    _loaded = True
    import importlib

    for module in EXTENSION_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
