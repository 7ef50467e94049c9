"""Workflow-level definitions: events, errors, retries and timeouts, compiled from raw dicts."""

from __future__ import annotations

import re
from typing import Any, Mapping

from xflow_runtime.errors import DefinitionError
from xflow_runtime.plan.durations import optional_duration, parse_duration
from xflow_runtime.plan.model import Correlation, ErrorDef, EventDef, RetryDef, Timeouts, WorkflowExecTimeout

#: A code written ``/pattern/`` or ``/pattern/i`` is a regular expression over the error message.
_REGEX_CODE = re.compile(r"^/(?P<pattern>.+)/(?P<flags>i?)$", re.DOTALL)


def invalid(where: str, message: str) -> DefinitionError:
    return DefinitionError([f"{where}: {message}" if where else message])


def as_list(value: Any, where: str) -> list[Any]:
    """A list-valued top-level section; a URI string must have been resolved by the loader."""
    if value is None:
        return []
    if isinstance(value, str):
        raise invalid(where, f"the reference {value!r} was not resolved; load the document with "
                              "xflow_runtime.definition.load_workflow (or pass the list inline)")
    if isinstance(value, Mapping):
        # The loader may leave the referenced document's shape ({"functions": [...]}).
        key = where.rsplit("/", 1)[-1]
        if isinstance(value.get(key), list):
            return list(value[key])
    if not isinstance(value, list):
        raise invalid(where, f"expected a list, found {type(value).__name__}")
    return value


def compile_event_def(raw: Mapping[str, Any], where: str) -> EventDef:
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise invalid(where, "an event definition needs a 'name'")
    kind = raw.get("kind", "consumed")
    if kind not in ("consumed", "produced"):
        raise invalid(where, f"event kind {kind!r} is not 'consumed' or 'produced'")
    correlation = tuple(
        Correlation(str(item["contextAttributeName"]),
                    None if item.get("contextAttributeValue") is None else str(item["contextAttributeValue"]))
        for item in raw.get("correlation") or ()
    )
    return EventDef(
        name=name, type=str(raw.get("type", "")), source=raw.get("source"), kind=kind,
        correlation=correlation, data_only=_bool(raw.get("dataOnly", True)),
        metadata=dict(raw.get("metadata") or {}),
    )


def compile_error_def(raw: Mapping[str, Any], where: str) -> ErrorDef:
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise invalid(where, "an error definition needs a 'name'")
    code = raw.get("code")
    pattern = None
    if code is not None:
        code = str(code)
        match = _REGEX_CODE.match(code)
        if match:
            flags = re.IGNORECASE if match.group("flags") else 0
            try:
                pattern = re.compile(match.group("pattern"), flags)
            except re.error as exc:
                raise invalid(where, f"error code {code!r} is not a valid regular expression: {exc}") from None
    return ErrorDef(name=name, code=code, description=raw.get("description"), code_pattern=pattern)


def compile_retry_def(raw: Mapping[str, Any], where: str) -> RetryDef:
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise invalid(where, "a retry definition needs a 'name'")
    attempts = _number(raw.get("maxAttempts", 1), f"{where}/maxAttempts")
    multiplier = raw.get("multiplier")
    jitter = raw.get("jitter")
    if isinstance(jitter, str) and re.fullmatch(r"\s*(0(\.\d+)?|1(\.0+)?)\s*", jitter):
        jitter = float(jitter)  # a fraction written as a string
    jitter_fraction = jitter_seconds = 0.0
    if isinstance(jitter, (int, float)) and not isinstance(jitter, bool):
        if not 0 <= jitter <= 1:
            raise invalid(f"{where}/jitter", f"a numeric jitter is a fraction between 0 and 1, found {jitter}")
        jitter_fraction = float(jitter)
    elif jitter is not None:
        jitter_seconds = parse_duration(jitter, where=f"{where}/jitter")
    return RetryDef(
        name=name,
        max_attempts=max(1, int(attempts)),
        delay=optional_duration(raw.get("delay"), where=f"{where}/delay") or 0.0,
        increment=optional_duration(raw.get("increment"), where=f"{where}/increment") or 0.0,
        multiplier=None if multiplier is None else _number(multiplier, f"{where}/multiplier"),
        max_delay=optional_duration(raw.get("maxDelay"), where=f"{where}/maxDelay"),
        jitter_fraction=jitter_fraction,
        jitter_seconds=jitter_seconds,
    )


#: The retry strategy used with ``autoRetries: true`` when an action has no ``retryRef``.
DEFAULT_AUTO_RETRY = RetryDef(name="<default>", max_attempts=5, delay=1.0, multiplier=2.0, max_delay=30.0)


def compile_workflow_exec_timeout(raw: Any, where: str) -> WorkflowExecTimeout | None:
    if raw is None:
        return None
    if isinstance(raw, Mapping):
        return WorkflowExecTimeout(
            duration=parse_duration(raw.get("duration"), where=f"{where}/duration"),
            interrupt=_bool(raw.get("interrupt", True)),
            run_before=raw.get("runBefore"),
        )
    return WorkflowExecTimeout(duration=parse_duration(raw, where=where))


def compile_timeouts(raw: Any, where: str, inherited: Timeouts) -> Timeouts:
    """State (or branch) timeouts on top of the inherited workflow-level ones."""
    if raw is None:
        return inherited
    if not isinstance(raw, Mapping):
        raise invalid(where, "timeouts must be an object")
    total, single = inherited.state_total, inherited.state_single
    state_exec = raw.get("stateExecTimeout")
    if isinstance(state_exec, Mapping):
        total = parse_duration(state_exec.get("total"), where=f"{where}/stateExecTimeout/total")
        single = optional_duration(state_exec.get("single"), where=f"{where}/stateExecTimeout/single")
    elif state_exec is not None:
        total, single = parse_duration(state_exec, where=f"{where}/stateExecTimeout"), None

    def pick(key: str, current: float | None) -> float | None:
        value = raw.get(key)
        return current if value is None else parse_duration(value, where=f"{where}/{key}")

    return Timeouts(
        state_total=total, state_single=single,
        action=pick("actionExecTimeout", inherited.action),
        branch=pick("branchExecTimeout", inherited.branch),
        event=pick("eventTimeout", inherited.event),
    )


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool):
        raise invalid(where, f"expected a number, found {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise invalid(where, f"expected a number, found {value!r}") from None


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)
