"""Entry point: ``execute(plan, input, port=…, context=…) -> ExecutionResult``.

The instance's input must be a JSON object (``None`` means ``{}``). It is validated against
``dataInputSchema`` before the first state. The result's ``output`` is the last state's filtered
output, which may be any JSON value. ``end.continueAs`` starts the named workflow with the new
input right here (a new instance id from the port); the result is the last continuation's.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal

from xflow_runtime.interpreter import records
from xflow_runtime.error_codes import INVALID_INPUT, SUBFLOW_NOT_FOUND, VALIDATION
from xflow_runtime.engine.port import EnginePort
from xflow_runtime.engine.scopes import cancel_decided, start_tasks
from xflow_runtime.expressions.limits import DEFAULT_LIMITS, current_limits, reset_limits, use_limits
from xflow_runtime.interpreter.concurrency import TIMER, WORK, record_outcome, recorded_outcome
from xflow_runtime.interpreter.context import ExecutionContext
from xflow_runtime.interpreter.events import Inbox
from xflow_runtime.error_codes import TIMEOUT
from xflow_runtime.interpreter.failures import Failure
from xflow_runtime.interpreter.instance import Instance, StopRequested
from xflow_runtime.plan.model import End, WorkflowExecTimeout
from xflow_runtime.plan.states import DataInputSchema, WorkflowPlan

Status = Literal["completed", "failed"]

#: The outcome of a deadline that found a ``keepActive`` instance with no active path left.
KEPT = "kept"


@dataclass
class ExecutionResult:
    """How an instance ended. ``output`` is set when completed (and, for a workflow timeout, holds
    the data after ``runBefore``); ``error`` is ``{name, code, status, message, state?}`` when failed."""

    status: Status
    output: Any = None
    error: dict[str, Any] | None = None
    instance_id: str = ""
    produced_events: list[dict[str, Any]] = field(default_factory=list)
    #: (plan, input, workflowExecTimeout) of the continuation ``execute`` starts next, if any.
    continue_with: tuple[WorkflowPlan, Any, WorkflowExecTimeout | None] | None = field(
        default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == "completed"

    def raise_for_error(self) -> Any:
        """The output, or :class:`~xflow_runtime.errors.WorkflowFailed` when the instance failed."""
        if self.status != "completed":
            from xflow_runtime.errors import WorkflowFailed

            raise WorkflowFailed(self.instance_id, self.error or {})
        return self.output


async def execute(plan: WorkflowPlan, input: Any = None, *, port: EnginePort,
                  context: ExecutionContext | None = None) -> ExecutionResult:
    """Run one instance of ``plan`` to its end (following ``continueAs``)."""
    context = context or ExecutionContext()
    instance_id = context.instance_id or await port.new_id()
    inbox = Inbox(port)
    try:
        result = await _follow_continuations(plan, input, port, context, instance_id, inbox)
    except GeneratorExit:  # collected without finishing: nothing may be awaited
        raise
    except BaseException:
        await inbox.abandon()
        raise
    await inbox.close()
    return result


async def _follow_continuations(plan: WorkflowPlan, input: Any, port: EnginePort, context: ExecutionContext,
                                instance_id: str, inbox: Inbox) -> ExecutionResult:
    produced: list[dict[str, Any]] = []
    continuation = 0
    while True:
        # Continuations get their own step-name prefix, so step names stay unique in one execution.
        scope = f"+{continuation}/" if continuation else ""
        result = await run_instance(plan, input, port=port, context=context, instance_id=instance_id, inbox=inbox,
                                    scope=scope)
        produced.extend(result.produced_events)
        follow = result.continue_with
        if follow is None:
            result.produced_events = produced
            return result
        plan, input, timeout = follow
        instance_id = await port.new_id()
        continuation += 1
        if timeout is not None:
            from dataclasses import replace

            plan = replace(plan, workflow_exec_timeout=timeout)


async def run_instance(plan: WorkflowPlan, input: Any, *, port: EnginePort, context: ExecutionContext,
                       instance_id: str, inbox: Inbox | None = None, scope: str = "",
                       parent: Instance | None = None) -> ExecutionResult:
    """One instance, without following ``continueAs`` (the caller does)."""
    limits = (context.evaluation_limits or DEFAULT_LIMITS).with_timeout(plan.evaluation_timeout)
    token = use_limits(limits) if limits is not current_limits() else None
    try:
        return await _run_instance(plan, input, port=port, context=context, instance_id=instance_id, inbox=inbox,
                                   scope=scope, parent=parent)
    finally:
        if token is not None:
            reset_limits(token)


async def _run_instance(plan: WorkflowPlan, input: Any, *, port: EnginePort, context: ExecutionContext,
                        instance_id: str, inbox: Inbox | None, scope: str, parent: Instance | None) -> ExecutionResult:
    run = Instance(plan, port, context, instance_id, inbox=inbox, scope=scope, parent=parent)
    run.record(records.WORKFLOW_STARTED, workflow=plan.workflow_id, input=input)
    missing = [name for name in plan.secrets if name not in context.secrets]
    if missing:
        run.record(records.SECRETS_MISSING, names=missing)
    try:
        data = _check_input(plan, input, run)
        if plan.version_template is not None:
            run.variables["WORKFLOW"] = {**run.variables["WORKFLOW"],
                                         "version": await plan.version_template.render_async(data, run.variables)}
        run.data = data
        timeout = plan.workflow_exec_timeout
        if timeout is None:
            output, end = await run.run_states(plan.start, data)
        else:
            output, end = await _run_with_deadline(run, data, timeout)
        if plan.output_schema is not None:
            _check_against(plan.output_schema, output, "workflow output", "workflow-output-schema",
                           records.OUTPUT_VALIDATION_WARNING, run)
    except _TimedOut as timed_out:
        await run.close()
        run.record(records.WORKFLOW_FAILED, error=timed_out.error)
        return ExecutionResult("failed", timed_out.data, timed_out.error, instance_id, list(run.produced))
    except Exception as exc:  # noqa: BLE001 - a failure outside any state (input, exits, compensation)
        failure = Failure.from_exception(exc)
        run.record(records.WORKFLOW_FAILED, error=failure.to_dict())
        await run.close()
        return ExecutionResult("failed", None, failure.to_dict(), instance_id, list(run.produced))
    await run.close()
    run.record(records.WORKFLOW_COMPLETED, output=output)
    result = ExecutionResult("completed", output, None, instance_id, [] if parent else list(run.produced))
    if end.continue_as is not None:
        follow = end.continue_as
        target = context.workflows.get(follow.workflow_id, follow.version)
        if target is None and follow.workflow_id == plan.workflow_id:
            target = plan
        if target is None:
            error = Failure(f"continueAs: workflow '{follow.workflow_id}' is not registered", code=SUBFLOW_NOT_FOUND)
            return ExecutionResult("failed", None, error.to_dict(), instance_id, result.produced_events)
        try:
            new_input = output if follow.data is None else await follow.data.render_async(output, run.variables)
        except Exception as exc:  # noqa: BLE001 - a bad continueAs.data expression fails the instance
            return ExecutionResult("failed", None, Failure.from_exception(exc).to_dict(), instance_id,
                                   result.produced_events)
        if parent is not None:  # a subflow's parent sees the last continuation's output
            return await run_instance(target, new_input, port=port, context=context,
                                      instance_id=f"{instance_id}+", inbox=inbox, scope=f"{scope}+", parent=parent)
        result.continue_with = (target, new_input, follow.workflow_exec_timeout)
    return result


def _check_input(plan: WorkflowPlan, input: Any, run: Instance) -> Any:
    data = {} if input is None else input
    if not isinstance(data, dict):
        raise Failure(f"workflow input must be a JSON object, found {type(data).__name__}", code=INVALID_INPUT)
    if plan.data_input_schema is not None:
        _check_against(plan.data_input_schema, data, "workflow input", "dataInputSchema",
                       records.INPUT_VALIDATION_WARNING, run)
    return data


def _check_against(schema: DataInputSchema, data: Any, what: str, schema_name: str, warning: records.RecordKind,
                   run: Instance) -> None:
    """Fail with code ``validation`` (or record ``warning``) when ``data`` does not match ``schema``."""
    try:
        problems = sorted(schema.validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    except Exception as exc:  # noqa: BLE001 - e.g. a $ref naming a missing file: still our own code
        raise Failure(f"{what} cannot be checked against {schema_name}: {exc}", name=VALIDATION,
                      code=VALIDATION) from None
    if problems:
        first = problems[0]
        where = "/" + "/".join(str(part) for part in first.absolute_path)
        message = f"{what} does not match {schema_name} at {where}: {first.message}"
        if schema.fail_on_validation_errors:
            raise Failure(message, name=VALIDATION, code=VALIDATION,
                          details=[p.message for p in problems[:20]])
        run.record(warning, message=message)


class _TimedOut(Exception):
    def __init__(self, data: Any, error: dict[str, Any]):
        self.data, self.error = data, error


async def _run_with_deadline(run: Instance, data: Any, timeout: WorkflowExecTimeout) -> Any:
    """``workflowExecTimeout``: interrupt the current state (``interrupt: true``) or stop at the next
    state boundary (``interrupt: false``), run ``runBefore`` on the latest data, fail with ``timeout``.
    Which came first, the end or the deadline, is a recorded outcome (see ``concurrency``)."""
    kept: list[tuple[Any, End]] = []
    ended = asyncio.Event()  # keepActive: the states have ended, the instance waits for its deadline
    body = (_keep_active(run, data, kept, ended) if run.plan.keep_active
            else run.run_states(run.plan.start, data))
    key, (main, timer) = start_tasks([body, run.port.sleep(timeout.duration)], (WORK, TIMER))
    try:
        outcome = await recorded_outcome(run.port, key)
        if outcome == WORK:
            await asyncio.wait((main,))
        elif outcome == KEPT:
            await ended.wait()
        elif outcome is None:
            await asyncio.wait((main, timer), return_when=asyncio.FIRST_COMPLETED)
            outcome = WORK if main.done() else KEPT if kept else TIMER
        await record_outcome(run.port, key, outcome)  # a replay records it again, in its place
        if outcome == WORK:
            await cancel_decided((timer,))
            return main.result()
        if outcome == KEPT:  # keepActive: the deadline is the normal end of an instance with no active path
            await cancel_decided((main, timer))
            output, end = kept[0]
            if timeout.run_before is not None:
                output, _ = await run.run_states(timeout.run_before, output, compensating=True)
            return output, end
        if timeout.interrupt:
            await cancel_decided((main, timer))
        else:
            # Replays stop at the first boundary they reach after the recorded deadline, which
            # may come earlier than it did live (documented in specs/durability.md).
            run.stop_requested = True
            await cancel_decided((timer,))
            await asyncio.wait((main,))
            error = main.exception()
            if error is None:  # the state running at the deadline was the last one
                return main.result()
            if not isinstance(error, StopRequested):
                raise error
    except asyncio.CancelledError:
        for task in (main, timer):
            task.cancel()
        await asyncio.gather(main, timer, return_exceptions=True)
        raise
    latest = run.data
    if timeout.run_before is not None:
        latest, _ = await run.run_states(timeout.run_before, latest, compensating=True)
    error_dict = Failure(f"workflow did not finish within its workflowExecTimeout of {timeout.duration:g} s",
                         name=TIMEOUT, code=TIMEOUT).to_dict()
    raise _TimedOut(latest, error_dict)


async def _keep_active(run: Instance, data: Any, kept: list[tuple[Any, End]],
                       ended: asyncio.Event) -> tuple[Any, End]:
    """``keepActive: true``: after a non-terminating end the instance stays until its deadline."""
    output, end = await run.run_states(run.plan.start, data)
    if end.terminate:
        return output, end
    kept.append((output, end))
    ended.set()
    await asyncio.get_running_loop().create_future()  # never resolves: cancelled at the deadline
    return output, end
