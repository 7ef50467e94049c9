"""State handlers by state type, read from the one table of state types (:mod:`xflow_runtime.state_types`).

A handler is ``async def handler(state, data, run, scope) -> (data, exit)``:

- ``state``: the compiled state (a :class:`~xflow_runtime.plan.states.State` subclass);
- ``data``: the state data, after ``stateDataFilter.input``;
- ``run``: the instance, as a :class:`~xflow_runtime.interpreter.state_run.StateRun` (``run.port``,
  ``run.variables``, ``run.services``, ``run.record(...)``, ``run.run_actions(...)``…);
- ``scope``: the step-name prefix of this state visit; name steps ``f"{scope}/…"``.

It returns the state data before ``stateDataFilter.output`` and the exit to take, or ``None`` for
the state's own ``transition``/``end``. It raises to fail the state (``onErrors`` then applies).
Our own state types are entries of :mod:`xflow_runtime.state_types`; an embedder adds one with
``register_state_handler("mytype", handler)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable, cast

from xflow_runtime import state_types

if TYPE_CHECKING:
    from xflow_runtime.interpreter.state_run import StateRun
    from xflow_runtime.plan.model import Exit

#: The first parameter is the concrete State subclass the handler is registered for.
StateHandler = Callable[[Any, Any, "StateRun", str], Awaitable[tuple[Any, "Exit | None"]]]


def register_state_handler(type_name: str, handler: StateHandler) -> None:
    """Run states of ``type_name`` with ``handler`` (replaces an earlier registration)."""
    state_types.register(type_name, handler=handler)


#: The handler of a state type, or ``None`` (one dict read once resolved: called per state visit).
state_handler = cast("Callable[[str], StateHandler | None]", state_types.handler)
