"""``aiagentproxy`` reaching an A2A agent (specs/a2a.md §3): the state's ``execution.functionRef``
names a ``type: a2a`` function. Every protocol call is a recorded step, so a resumed instance
repeats none that completed:

1. ``<visit>/a2a-card``: the agent card (kept in the history; decides the default mode);
2. ``<visit>/a2a-send``: ``SendMessage`` with a deterministic ``messageId`` (UUIDv5 of the instance
   and the visit: an agent that de-duplicates sees a re-sent message as the same one). The
   message is the user message as a text part plus ``{agentConfig, agentContext}`` as a data part;
   a task left ``input-required`` by an earlier visit of the same agent in this instance is
   continued (its ``taskId`` and ``contextId`` are sent);
3. until the task settles (completed, input-required, or a failure state):
   - ``blocking``: the send waits; a reply that is not settled yet continues as ``poll``;
   - ``push``: the send carries a push config (the call's callback URL and token); the instance
     waits durably on the call's topic, and a callback only wakes it: ``<visit>/a2a-get:<n>``
     (``GetTask``) reads the task from the agent. The wait also wakes every ``pollInterval``
     (doubling to 60 s) and reads the task, so a lost callback (the agent's sender is best
     effort; our process may have been down) delays the answer, never strands it;
   - ``poll``: a durable sleep of ``pollInterval`` (doubling to 60 s), then ``GetTask``;
   bounded by the state's ``timeouts.eventTimeout``: past it the task is cancelled (best effort)
   and the state fails with ``code: timeout``.
"""

from __future__ import annotations

import uuid
from typing import Any, Awaitable, Callable, Mapping

from xflow_runtime import a2a as codes
from xflow_runtime.a2a import outcome
from xflow_runtime.a2a.function import ENVELOPE, user_message
from xflow_runtime.error_codes import FUNCTION_NOT_IMPLEMENTED, TIMEOUT
from xflow_runtime.errors import WorkflowError
from xflow_runtime.interpreter import records
from xflow_runtime.interpreter.state_run import CacheKey, StateRun

#: Namespace of our deterministic message and call ids.
_IDS = uuid.UUID("8d1d1f2e-4f3c-5b7a-9e61-a2a0c0ffee19")
#: Longest gap between two reads of a task while waiting.
MAX_INTERVAL = 60.0
DEFAULT_POLL = 1.0


async def call_agent(state: Any, run: StateRun, scope: str, user_text: str, context_data: Mapping[str, Any]) -> dict[str, Any]:
    """``$agentOutcome`` of one visit (see the module docstring); failure states raise. Traced as
    one ``invoke_agent {agent}`` CLIENT span (specs/observability.md §6): every request of the
    visit carries its ``traceparent``; a visit replayed from history leaves none."""
    telemetry = run.telemetry
    if telemetry is None:
        return await _call_agent(state, run, scope, user_text, context_data, None)
    with telemetry.remote_agent(state.agent_name, _server(state.execution.function.operation),
                                replaying=getattr(run.port, "replaying", False)) as span:
        return await _call_agent(state, run, scope, user_text, context_data, span)


def _server(operation: str) -> tuple[str, int | None] | None:
    """``server.address``/``server.port`` of the agent (its card's host; nothing else of the URL)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(operation.split("#", 1)[0].strip())
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    return (parts.hostname, port) if parts.hostname else None


async def _call_agent(state: Any, run: StateRun, scope: str, user_text: str, context_data: Mapping[str, Any],
                      span: Any) -> dict[str, Any]:
    function = state.execution.function
    invoker = run.function_invoker
    if invoker is None:
        raise WorkflowError(f"agent '{state.agent_name}': no function invoker to reach the A2A agent",
                            code=FUNCTION_NOT_IMPLEMENTED)
    wait_bound = state.timeouts.event

    def step(name: str, envelope: dict[str, Any]) -> Awaitable[Any]:
        return run.port.run_step(f"{scope}/{name}", lambda: invoker(function, envelope, selection_set=None))

    card = await step("a2a-card", {ENVELOPE: "card"})
    root = run.root
    pending = _pending(root)
    continued = pending.get(state.agent_name) or {}
    key = f"{run.instance_id}/{scope}"
    message = user_message(str(uuid.uuid5(_IDS, f"message:{key}")), user_text, dict(context_data),
                           task_id=continued.get("taskId"), context_id=continued.get("contextId"))
    # recorded: a replay waits the way the first run did, even if the runtime's callback settings changed
    mode = await run.port.run_step(f"{scope}/a2a-mode", lambda: _async(_mode, state, card, run))
    send: dict[str, Any] = {ENVELOPE: "send", "card": card, "message": message,
                            "returnImmediately": mode != "blocking"}
    if wait_bound is not None and mode == "blocking":
        send["timeout"] = wait_bound
    call_id = str(uuid.uuid5(_IDS, f"call:{key}"))
    topic = codes.callback_topic(call_id)
    settings = run.services.a2a
    # (a replay by a runtime without callback settings sends no push config: its wait relies on its reads)
    if mode == "push" and settings is not None and settings.push_ready:
        url, token = settings.callback(root.instance_id, call_id)
        send["push"] = {"url": url, "token": token, "authentication": {"scheme": "Bearer", "credentials": token}}
    run.record(records.A2A_CALL, state=state.name, call=call_id, mode=mode, message_id=message["messageId"],
               continues=continued.get("taskId"))
    started = await run.port.now()
    reply = await step("a2a-send", send)
    task_id = (reply.get("task") or {}).get("id")
    if span is not None:
        span.set("a2a.task.id", task_id)
    run.record(records.A2A_TASK, state=state.name, call=call_id, task_id=task_id, status=_status(reply))
    reads = 0
    interval = state.a2a_poll_interval or DEFAULT_POLL
    while not outcome.is_settled(reply):
        remaining = None if wait_bound is None else wait_bound - (await run.port.now() - started)
        if remaining is not None and remaining <= 0:
            await _cancel(step, card, task_id)
            run.record(records.A2A_CALL_ENDED, state=state.name, call=call_id, status="timeout", task_id=task_id)
            raise WorkflowError(f"agent '{state.agent_name}': the A2A task did not settle within {wait_bound:g} s",
                                name="timeout", code=TIMEOUT, details={"taskId": task_id})
        pause = interval if remaining is None else min(interval, remaining)
        woken = None
        if mode == "push":
            woken = await run.port.wait_event(topic, pause)
            if woken is not None and woken.get("taskId") != task_id:
                run.record(records.A2A_CALLBACK_IGNORED, state=state.name, call=call_id, task_id=woken.get("taskId"))
                continue
        else:
            await run.port.sleep(pause)
        if woken is None:
            interval = min(interval * 2, max(MAX_INTERVAL, state.a2a_poll_interval or 0))
        reads += 1
        reply = await step(f"a2a-get:{reads}", {ENVELOPE: "get", "card": card, "taskId": task_id})
        run.record(records.A2A_TASK_READ, state=state.name, call=call_id, read=reads, status=_status(reply),
                   woken_by="timer" if woken is None else "callback")
    status = _status(reply)
    run.record(records.A2A_CALL_ENDED, state=state.name, call=call_id, status=status, task_id=task_id)
    task = reply.get("task") or {}
    if span is not None:
        span.set("a2a.task.state", status)
        span.set("gen_ai.conversation.id", task.get("contextId"))
    if status == "input-required":
        pending[state.agent_name] = {"taskId": task.get("id"), "contextId": task.get("contextId")}
    else:
        pending.pop(state.agent_name, None)
    return outcome.agent_outcome(state.agent_name, reply)


async def _async(function: Callable[..., Any], *args: Any) -> Any:
    return function(*args)


def _status(reply: Mapping[str, Any]) -> str:
    return outcome.STATUS_NAMES.get(outcome.task_state(reply), "unknown")


def _mode(state: Any, card: Mapping[str, Any], run: StateRun) -> str:
    settings = run.services.a2a
    push_ready = settings is not None and settings.push_ready
    card_push = bool((card.get("capabilities") or {}).get("pushNotifications"))
    mode = state.a2a_mode or ("push" if push_ready and card_push else "poll")
    if mode == "push" and not (push_ready and card_push):
        why = ("the runtime has no callback URL and secret (Runtime(a2a=A2ASettings(…)), xflow serve "
               "--a2a-callback-url/--a2a-callback-secret-env)") if not push_ready else \
            "the agent card does not offer push notifications"
        raise WorkflowError(f"agent '{state.agent_name}': push mode is not possible: {why}",
                            code=codes.PUSH_UNAVAILABLE)
    return mode


async def _cancel(step: Callable[[str, dict[str, Any]], Awaitable[Any]], card: Any, task_id: str | None) -> None:
    if task_id is None:
        return
    try:
        await step("a2a-cancel", {ENVELOPE: "cancel", "card": card, "taskId": task_id})
    except WorkflowError:
        pass  # best effort: the task may have ended meanwhile, or not be cancelable


#: Interrupted (input-required) tasks of an instance by agent name. Kept in the instance's cache:
#: a replay rebuilds it from the recorded replies, so it needs no storage of its own.
_PENDING: CacheKey[dict[str, dict[str, Any]]] = CacheKey("a2a: interrupted tasks by agent")


def _pending(root: StateRun) -> dict[str, dict[str, Any]]:
    return root.cached(_PENDING, dict)
