"""Operation, switch, sleep and inject states."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xflow_runtime.interpreter import records
from xflow_runtime.errors import NO_CONDITION_MATCHED
from xflow_runtime.expressions import PENDING, merge
from xflow_runtime.interpreter.data import merge_event_payload
from xflow_runtime.interpreter.events import payload
from xflow_runtime.interpreter.failures import Failure
from xflow_runtime.plan.model import Exit
from xflow_runtime.plan.states import InjectState, OperationState, SleepState, SwitchState

if TYPE_CHECKING:
    from xflow_runtime.interpreter.instance import Instance


async def operation(state: OperationState, data: Any, run: "Instance", scope: str) -> tuple[Any, Exit | None]:
    return await run.run_actions(state.actions, data, state.action_mode, scope, state.timeouts), None


async def switch(state: SwitchState, data: Any, run: "Instance", scope: str) -> tuple[Any, Exit | None]:
    """First condition (in order) whose value is exactly ``true``; else the default. An event switch
    takes the condition of the first matching event, or the default once ``eventTimeout`` passes."""
    if state.data_conditions:
        variables = run.variables
        for condition in state.data_conditions:
            chosen = condition.condition.condition_now(data, variables)  # no coroutine when in-process
            if chosen is PENDING:
                chosen = await condition.condition.evaluate_condition_async(data, variables)
            if chosen:
                return data, condition.exit
        return data, _default(state)
    received = await run.inbox.receive([c.event for c in state.event_conditions], state.timeouts.event,
                                       run.correlation)
    if received is None:
        run.record(records.EVENT_TIMEOUT, state=state.name)
        return data, _default(state)
    definition, event = received
    run.record(records.EVENT_CONSUMED, state=state.name, event_name=definition.name, id=event.get("id"))
    chosen = next(c for c in state.event_conditions if c.event is definition)
    data = await merge_event_payload(data, chosen.filter, payload(event, definition), definition.name, run.variables)
    return data, chosen.exit


def _default(state: SwitchState) -> Exit:
    if state.default is None:  # SonataFlow's switch without defaultCondition (XF141)
        raise Failure(f"switch '{state.name}': no condition matched and there is no defaultCondition",
                      code=NO_CONDITION_MATCHED, name=NO_CONDITION_MATCHED)
    return state.default


async def sleep(state: SleepState, data: Any, run: "Instance", scope: str) -> tuple[Any, Exit | None]:
    await run.port.sleep(state.duration)
    return data, None


async def inject(state: InjectState, data: Any, run: "Instance", scope: str) -> tuple[Any, Exit | None]:
    """The injected object is merged into the state data, the injected values winning."""
    return merge(data, state.data), None
