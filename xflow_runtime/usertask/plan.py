"""Compiled ``usertask`` states (specs/states-human.md §1). Named in :mod:`xflow_runtime.state_types`.

Every field that names people (``assignee``, ``candidateUsers``, ``candidateGroups``) and
``dueDate`` is a template: literal unless it is a whole ``${ … }``; a string of candidates may
also be comma-separated names. Outcomes have the shape of agent outcomes, with ``$taskOutcome``
bound instead of ``$agentOutcome``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from xflow_runtime.expressions import JqExpression
from xflow_runtime.plan.actions import compile_exit
from xflow_runtime.agent.plan import AgentOutcome, compile_outcome
from xflow_runtime.plan.context import CompileContext, require
from xflow_runtime.plan.definitions import invalid
from xflow_runtime.plan.model import Exit
from xflow_runtime.plan.states import State
from xflow_runtime.plan.templates import Template

#: Variables bound in outcome conditions and data filters of a task.
TASK_OUTCOME_VARIABLES = ("taskOutcome",)


@dataclass(frozen=True, kw_only=True)
class UserTaskState(State):
    task_key: str
    form_key: str | None = None
    assignee: Template | None = None
    candidate_users: Template | None = None
    candidate_groups: Template | None = None
    due_date: Template | None = None
    data_filter: JqExpression | None = None
    form_schema: Any = None  # xflow_runtime.agent.schemas.CompiledSchema
    outcomes: tuple[AgentOutcome, ...] = ()
    on_delete: Exit | None = None
    on_timeout: Exit | None = None


def compile_usertask(raw: dict, ctx: CompileContext, common: dict[str, Any]) -> State:
    where = ctx.where
    task_key = require(raw, "taskKey", where)
    if not isinstance(task_key, str) or not task_key.strip():
        raise invalid(f"{where}/taskKey", "expected a non-empty string")
    outcomes = tuple(compile_outcome(item, ctx, f"{where}/taskOutcomes/{i}", TASK_OUTCOME_VARIABLES)
                     for i, item in enumerate(raw.get("taskOutcomes") or ()))
    if common.get("exit") is None and (not outcomes or any(o.finish and o.exit is None for o in outcomes)):
        raise invalid(where, "a task without outcomes, or with an outcome without a transition, needs the "
                             "state's own 'transition' or 'end'")
    form_schema = None
    if raw.get("formSchema") is not None:
        from xflow_runtime.agent.schemas import compile_schema

        form_schema = compile_schema(raw["formSchema"], f"{where}/formSchema", ctx.base_dir)
    return UserTaskState(
        **common,
        task_key=task_key,
        form_key=raw.get("formKey"),
        assignee=ctx.template(raw.get("assignee"), f"{where}/assignee"),
        candidate_users=ctx.template(raw.get("candidateUsers"), f"{where}/candidateUsers"),
        candidate_groups=ctx.template(raw.get("candidateGroups"), f"{where}/candidateGroups"),
        due_date=ctx.template(raw.get("dueDate"), f"{where}/dueDate"),
        data_filter=ctx.expression(raw.get("dataFilter"), f"{where}/dataFilter"),
        form_schema=form_schema,
        outcomes=outcomes,
        on_delete=_exit_object(raw.get("onDelete"), ctx, f"{where}/onDelete"),
        on_timeout=_exit_object(raw.get("onTimeout"), ctx, f"{where}/onTimeout"),
    )


def _exit_object(raw: Any, ctx: CompileContext, where: str) -> Exit | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise invalid(where, "expected an object with 'transition' or 'end'")
    return compile_exit(raw, ctx, where, required=True)
