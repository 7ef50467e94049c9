"""Compiled ``aiagentproxy`` states (specs/states-human.md §7). Named in :mod:`xflow_runtime.state_types`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xflow_runtime.expressions import JqExpression
from xflow_runtime.agent.plan import AgentOutcome, _execution, compile_outcome  # noqa: PLC2701
from xflow_runtime.plan.context import CompileContext, require
from xflow_runtime.plan.definitions import invalid
from xflow_runtime.plan.model import FunctionRef, SubFlowRef
from xflow_runtime.plan.states import State


@dataclass(frozen=True, kw_only=True)
class AgentProxyState(State):
    agent_name: str
    system_message: Any = None  # Prompt | None
    user_message: Any            # Prompt
    memory: Any                  # MemorySettings (from the flat memoryId)
    execution: FunctionRef | SubFlowRef
    outcomes: tuple[AgentOutcome, ...] = ()
    data_filter: JqExpression | None = None
    #: ``execution.mode`` / ``execution.pollInterval`` (seconds) of an A2A agent (specs/a2a.md).
    a2a_mode: str | None = None
    a2a_poll_interval: float | None = None


def compile_agent_proxy(raw: dict, ctx: CompileContext, common: dict[str, Any]) -> State:
    from xflow_runtime.agent.prompts import compile_prompt
    from xflow_runtime.agent.plan import _memory  # noqa: PLC2701

    where = ctx.where
    agent_name = require(raw, "agentName", where)
    outcomes = tuple(compile_outcome(item, ctx, f"{where}/agentOutcomes/{i}")
                     for i, item in enumerate(raw.get("agentOutcomes") or ()))
    if common.get("exit") is None and (not outcomes or any(o.finish and o.exit is None for o in outcomes)):
        raise invalid(where, "without outcomes, or with a finishing outcome without a transition, the state needs "
                             "its own 'transition' or 'end'")
    memory_id = raw.get("memoryId")
    execution = _execution(require(raw, "execution", where), agent_name, ctx, f"{where}/execution")
    a2a_mode, poll_interval = _a2a_options(raw["execution"], execution, f"{where}/execution")
    return AgentProxyState(
        **common, agent_name=agent_name,
        system_message=compile_prompt(raw["systemMessage"], f"{where}/systemMessage") if raw.get("systemMessage") else None,
        user_message=compile_prompt(require(raw, "userMessage", where), f"{where}/userMessage"),
        memory=_memory({"memoryId": memory_id} if memory_id else None, f"{where}/memoryId"),
        execution=execution, a2a_mode=a2a_mode, a2a_poll_interval=poll_interval,
        outcomes=outcomes, data_filter=ctx.expression(raw.get("dataFilter"), f"{where}/dataFilter"),
    )


def _a2a_options(raw: Any, execution: FunctionRef | SubFlowRef, where: str) -> tuple[str | None, float | None]:
    """``mode`` (blocking | push | poll) and ``pollInterval``: only for a ``type: a2a`` function."""
    from xflow_runtime.a2a import MODES
    from xflow_runtime.plan.durations import parse_duration

    mode, interval = raw.get("mode"), raw.get("pollInterval")
    if mode is None and interval is None:
        return None, None
    if not (isinstance(execution, FunctionRef) and execution.function is not None
            and execution.function.type == "a2a"):
        raise invalid(where, "'mode' and 'pollInterval' are for a functionRef to a 'type: a2a' function")
    if mode is not None and mode not in MODES:
        raise invalid(f"{where}/mode", f"expected one of {', '.join(MODES)}, found {mode!r}")
    seconds = None if interval is None else parse_duration(interval, where=f"{where}/pollInterval")
    if seconds is not None and seconds <= 0:
        raise invalid(f"{where}/pollInterval", "must be longer than zero")
    return mode, seconds

