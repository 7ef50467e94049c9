"""The ``usertask`` state handler (named in :mod:`xflow_runtime.state_types`).

1. evaluate the task's people, ``dueDate`` and input (``dataFilter``) against the state data;
2. create the task in ``services.tasks`` (one recorded step; a replay does not create it twice)
   and emit ``io.xflow.usertask.created``;
3. wait durably (the instance's inbox) for a ``completed`` / ``deleted`` CloudEvent carrying the
   task's key, at most until ``dueDate``. With a store, the event only wakes the instance: the
   task row decides (an event for a task still open is ignored), so a forged event cannot complete
   a task. Without a store (``run_workflow``), the event's ``data`` is the completion;
4. completed → ``$taskOutcome`` = {returnValues: data, completedBy, taskId, taskKey}, outcomes as
   for agents; deleted → ``onDelete`` (else ``code: taskDeleted``); due → the row is marked
   ``timedOut``, ``io.xflow.usertask.timedout`` is emitted, ``onTimeout`` (else ``code: timeout``).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import Any, Mapping

from xflow_runtime.interpreter import records
from xflow_runtime.error_codes import TASK_DATA_INVALID, TASK_DELETED, TASK_INVALID, TASK_NO_OUTCOME, TIMEOUT
from xflow_runtime.agent.outcomes import apply_outcome_filter, select_outcome
from xflow_runtime.errors import WorkflowError
from xflow_runtime.interpreter.state_run import StateRun
from xflow_runtime.agent.plan import OutcomeFilter
from xflow_runtime.plan.durations import parse_duration
from xflow_runtime.plan.model import Correlation, EventDef, Exit
from xflow_runtime.usertask.plan import UserTaskState
from xflow_runtime.usertask import (COMPLETED, CREATED, DELETED, TASK_ID_ATTRIBUTE, TASK_KEY_ATTRIBUTE,
                                    TIMED_OUT)

_DEFAULT = OutcomeFilter()


#: The history record of each way a task ends.
_ENDED: dict[str, records.RecordKind] = {"completed": records.TASK_COMPLETED, "deleted": records.TASK_DELETED,
                                         "timedOut": records.TASK_TIMED_OUT}


async def handle_usertask(state: UserTaskState, data: Any, run: StateRun, scope: str) -> tuple[Any, Exit | None]:
    variables = run.variables
    root = run.root
    now = await run.port.now()
    task_id = await run.port.new_id()
    assignee = _one(state.assignee, data, variables, "assignee")
    fields = {
        "id": task_id, "tenant_id": run.services.identity.tenant, "instance_id": root.instance_id,
        "workflow_id": run.workflow_id, "state_name": state.name, "task_key": state.task_key,
        "form_key": state.form_key, "assignee": assignee,
        "candidate_users": _names(state.candidate_users, data, variables, "candidateUsers"),
        "candidate_groups": _names(state.candidate_groups, data, variables, "candidateGroups"),
        "due_at": _due(state, data, variables, now),
        "input": data if state.data_filter is None else await state.data_filter.evaluate_async(data, variables),
        "form_schema": None if state.form_schema is None else dict(state.form_schema.schema),
        "status": "open" if assignee is None else "claimed", "claimed_by": assignee,
    }
    store = run.services.tasks
    if store is not None:
        await run.port.run_step(f"{scope}/task-create", lambda: asyncio.to_thread(_created, store, fields))
    attributes = {TASK_ID_ATTRIBUTE: task_id, TASK_KEY_ATTRIBUTE: state.task_key}
    await run.emit(_produced(CREATED), _public(fields), attributes, f"{scope}/task-created")
    run.record(records.TASK_CREATED, state=state.name, task_id=task_id, task_key=state.task_key)
    kind, payload = await _wait(state, run, scope, store, task_id, fields["due_at"])
    run.record(_ENDED[kind], state=state.name, task_id=task_id, task_key=state.task_key)
    if kind == "deleted":
        if state.on_delete is None:
            raise WorkflowError(f"task '{state.task_key}' was deleted", name=TASK_DELETED, code=TASK_DELETED)
        return data, state.on_delete
    if kind == "timedOut":
        await run.emit(_produced(TIMED_OUT), {"taskKey": state.task_key}, attributes,
                       f"{scope}/task-timedout")
        if state.on_timeout is None:
            raise WorkflowError(f"task '{state.task_key}' was not completed by its due date", name=TIMEOUT,
                                code=TIMEOUT)
        return data, state.on_timeout
    return await _completed(state, data, variables, {"returnValues": payload.get("data"),
                                               "completedBy": payload.get("completedBy"),
                                               "taskId": task_id, "taskKey": state.task_key})


async def _wait(state: UserTaskState, run: StateRun, scope: str, store: Any, task_id: str,
                due_at: datetime | None) -> tuple[str, Mapping[str, Any]]:
    """("completed", {data, completedBy}) | ("deleted", {}) | ("timedOut", {})."""
    correlation = [Correlation(TASK_KEY_ATTRIBUTE, state.task_key)]
    if store is not None:  # the inbox sends the task id too: two tasks of one key never take each other's event
        correlation.append(Correlation(TASK_ID_ATTRIBUTE, task_id))
    definitions = tuple(EventDef(name=f"usertask-{kind}", type=kind_type, source=None, correlation=tuple(correlation))
                        for kind, kind_type in (("completed", COMPLETED), ("deleted", DELETED)))
    wakes = 0
    while True:
        timeout = None if due_at is None else max(0.0, due_at.timestamp() - await run.port.now())
        received = await run.inbox.receive(definitions, timeout, {})
        if received is None:
            if store is None:
                return "timedOut", {}
            row = await run.port.run_step(f"{scope}/task-timeout", lambda: asyncio.to_thread(_row_dict, store.time_out, task_id))
            return _from_row(row) or ("timedOut", {})
        definition, event = received
        if store is None:
            sent = event.get("data")
            body: Mapping[str, Any] = sent if isinstance(sent, Mapping) else {}
            return ("deleted", {}) if definition.type == DELETED else ("completed", _checked(state, body))
        wakes += 1
        row = await run.port.run_step(f"{scope}/task-read:{wakes}", lambda: asyncio.to_thread(_row_dict, store.get, task_id))
        resolved = _from_row(row)
        if resolved is not None and resolved[0] != "timedOut":
            return resolved
        run.record(records.TASK_EVENT_IGNORED, state=state.name, task_id=task_id, type=definition.type)


def _created(store: Any, fields: Mapping[str, Any]) -> dict[str, Any]:
    return store.create(fields).to_dict()


def _row_dict(read: Any, task_id: str) -> dict[str, Any] | None:
    view = read(task_id)
    return None if view is None else view.to_dict()


def _from_row(row: Mapping[str, Any] | None) -> tuple[str, Mapping[str, Any]] | None:
    if row is None or row["status"] in ("open", "claimed"):
        return None
    if row["status"] == "completed":
        return "completed", {"data": row["data"], "completedBy": row["completedBy"]}
    return row["status"], {}


def _checked(state: UserTaskState, body: Mapping[str, Any]) -> Mapping[str, Any]:
    if state.form_schema is not None:
        problems = state.form_schema.errors(body.get("data"))
        if problems:
            raise WorkflowError(f"task '{state.task_key}': the completion data does not match the form: "
                                + "; ".join(problems), code=TASK_DATA_INVALID)
    return body


async def _completed(state: UserTaskState, data: Any, variables: Mapping[str, Any],
               task_outcome: dict[str, Any]) -> tuple[Any, Exit | None]:
    bound = {**variables, "taskOutcome": task_outcome}
    outcome = await select_outcome(state.outcomes, data, bound)
    if outcome is None:
        if state.exit is None:
            raise WorkflowError(f"task '{state.task_key}': no outcome matched and the state has no transition",
                                code=TASK_NO_OUTCOME)
        return await apply_outcome_filter(_DEFAULT, data, task_outcome, bound), None
    return await apply_outcome_filter(outcome.filter, data, task_outcome, bound), outcome.exit


def _one(template: Any, data: Any, variables: Mapping[str, Any], field: str) -> str | None:
    if template is None:
        return None
    value = template.render(data, variables)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise WorkflowError(f"usertask {field} must be a user name, got {type(value).__name__}", code=TASK_INVALID)
    return value


def _names(template: Any, data: Any, variables: Mapping[str, Any], field: str) -> list[str]:
    if template is None:
        return []
    value = template.render(data, variables)
    if value is None:
        return []
    if isinstance(value, str):
        return [name.strip() for name in value.split(",") if name.strip()]
    if isinstance(value, list) and all(isinstance(name, str) for name in value):
        return list(value)
    raise WorkflowError(f"usertask {field} must be a list of names or a comma-separated string", code=TASK_INVALID)


def _due(state: UserTaskState, data: Any, variables: Mapping[str, Any], now: float) -> datetime | None:
    value = None if state.due_date is None else state.due_date.render(data, variables)
    if value is None:
        return None
    if isinstance(value, str) and value.startswith("P"):
        return datetime.fromtimestamp(now + parse_duration(value, where="dueDate"), timezone.utc)
    try:
        due = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise WorkflowError(f"usertask dueDate must be an ISO 8601 duration or date-time, got {value!r}",
                            code=TASK_INVALID) from None
    return due if due.tzinfo else due.replace(tzinfo=timezone.utc)


def _produced(event_type: str) -> EventDef:
    return EventDef(name=event_type.rsplit(".", 1)[-1], type=event_type, source=None, kind="produced")


def _public(fields: Mapping[str, Any]) -> dict[str, Any]:
    due = fields["due_at"]
    return {"taskKey": fields["task_key"], "formKey": fields["form_key"],
            "assignee": fields["assignee"], "candidateUsers": fields["candidate_users"],
            "candidateGroups": fields["candidate_groups"], "dueDate": None if due is None else due.isoformat(),
            "input": fields["input"]}

