"""Which deliberate differences from the official 0.8 schema a document exercises.

Each code below is one entry of the list in ``specs/schemas.md``. The differential tests compare
our verdict with the official one only on documents that exercise none of them; every code also
has an explicit expected-difference case in ``test_deliberate_differences.py``. The checks are as
narrow as the difference itself, so a real disagreement is never hidden behind one of them.
"""

from __future__ import annotations

from typing import Any, Iterator

START_WITHOUT_SCHEDULE = "start-without-schedule"
SLEEP_BEFORE_AND_AFTER = "sleep-before-and-after"
END_FALSE = "end-false"
COMPENSATION_END_AND_TRANSITION = "compensation-end-and-transition"
DATA_INPUT_SCHEMA_OBJECT = "data-input-schema-object"
OPERATION_OBJECT = "function-operation-object"
CLOSED_OBJECTS = "closed-objects"
NUM_COMPLETED_REQUIRED = "num-completed-required"
AUTH_PROPERTIES_BY_SCHEME = "auth-properties-by-scheme"
EMPTY_STATE_NAME = "empty-state-name"

ALL = (START_WITHOUT_SCHEDULE, SLEEP_BEFORE_AND_AFTER, END_FALSE, COMPENSATION_END_AND_TRANSITION,
       DATA_INPUT_SCHEMA_OBJECT, OPERATION_OBJECT, CLOSED_OBJECTS, NUM_COMPLETED_REQUIRED,
       AUTH_PROPERTIES_BY_SCHEME, EMPTY_STATE_NAME)

#: state type → the keys its ``timeouts`` object may hold (ours closes these objects).
STATE_TIMEOUT_KEYS = {
    "sleep": {"stateExecTimeout"},
    "inject": {"stateExecTimeout"},
    "operation": {"stateExecTimeout", "actionExecTimeout"},
    "foreach": {"stateExecTimeout", "actionExecTimeout"},
    "event": {"stateExecTimeout", "actionExecTimeout", "eventTimeout"},
    "callback": {"stateExecTimeout", "actionExecTimeout", "eventTimeout"},
    "parallel": {"stateExecTimeout", "branchExecTimeout"},
}
BRANCH_TIMEOUT_KEYS = {"actionExecTimeout", "branchExecTimeout"}
SUBFLOW_KEYS = {"workflowId", "version", "onParentComplete", "invoke"}
CONTINUE_AS_KEYS = {"workflowId", "version", "data", "workflowExecTimeout"}
SLEEP_KEYS = {"before", "after"}
AUTH_KEYS = {"name", "scheme", "properties"}
BASIC_KEYS = {"username", "password", "metadata"}
BEARER_KEYS = {"token", "metadata"}
OAUTH2_KEYS = {"authority", "grantType", "clientId", "clientSecret", "scopes", "username", "password",
               "audiences", "subjectToken", "requestedSubject", "requestedIssuer", "metadata"}


def deliberate_differences(document: Any) -> set[str]:
    """The codes of the deliberate differences ``document`` exercises (empty: compare verdicts)."""
    found: set[str] = set()
    if not isinstance(document, dict):
        return found
    start = document.get("start")
    if isinstance(start, dict) and "schedule" not in start:
        found.add(START_WITHOUT_SCHEDULE)
    schema = document.get("dataInputSchema")
    if isinstance(schema, dict) and ("failOnValidationErrors" not in schema or isinstance(schema.get("schema"), dict)):
        found.add(DATA_INPUT_SCHEMA_OBJECT)
    functions = document.get("functions")
    if isinstance(functions, list) and any(isinstance(f, dict) and isinstance(f.get("operation"), dict) for f in functions):
        found.add(OPERATION_OBJECT)
    _check_auth(document.get("auth"), found)
    for node in _objects(document):
        if node.get("end") is False:
            found.add(END_FALSE)
        if isinstance(node.get("sleep"), dict):
            sleep = node["sleep"]
            if "before" in sleep and "after" in sleep:
                found.add(SLEEP_BEFORE_AND_AFTER)
            if set(sleep) - SLEEP_KEYS:
                found.add(CLOSED_OBJECTS)
        if _is_open_in_official(node.get("subFlowRef"), SUBFLOW_KEYS):
            found.add(CLOSED_OBJECTS)
        end = node.get("end")
        if isinstance(end, dict) and _is_open_in_official(end.get("continueAs"), CONTINUE_AS_KEYS):
            found.add(CLOSED_OBJECTS)
    states = document.get("states")
    for state in states if isinstance(states, list) else []:
        if isinstance(state, dict):
            _check_state(state, found)
    return found


def _check_state(state: dict[str, Any], found: set[str]) -> None:
    if state.get("name") == "":
        found.add(EMPTY_STATE_NAME)
    if (state.get("usedForCompensation") is True and "transition" in state
            and "end" in state and state["end"] is not False):
        found.add(COMPENSATION_END_AND_TRANSITION)
    state_type = state.get("type")
    allowed = STATE_TIMEOUT_KEYS.get(state_type) if isinstance(state_type, str) else None
    if state_type == "switch":
        allowed = {"stateExecTimeout", "eventTimeout"} if "eventConditions" in state else {"stateExecTimeout"}
    timeouts = state.get("timeouts")
    if allowed is not None and isinstance(timeouts, dict) and set(timeouts) - allowed:
        found.add(CLOSED_OBJECTS)
    if state_type == "parallel":
        if state.get("completionType") == "atLeast" and "numCompleted" not in state:
            found.add(NUM_COMPLETED_REQUIRED)
        branches = state.get("branches")
        for branch in branches if isinstance(branches, list) else []:
            if isinstance(branch, dict) and isinstance(branch.get("timeouts"), dict):
                if set(branch["timeouts"]) - BRANCH_TIMEOUT_KEYS:
                    found.add(CLOSED_OBJECTS)


def _check_auth(auth: Any, found: set[str]) -> None:
    for definition in auth if isinstance(auth, list) else []:
        if not isinstance(definition, dict):
            continue
        if set(definition) - AUTH_KEYS:
            found.add(CLOSED_OBJECTS)
        properties = definition.get("properties")
        if not isinstance(properties, dict):
            continue
        if "grantType" in properties and "clientId" in properties and set(properties) - OAUTH2_KEYS:
            found.add(CLOSED_OBJECTS)
        official_shapes = _official_auth_shapes(properties)
        scheme = definition.get("scheme", "basic")
        if official_shapes and scheme in ("basic", "bearer", "oauth2") and scheme not in official_shapes:
            found.add(AUTH_PROPERTIES_BY_SCHEME)


def _official_auth_shapes(properties: dict[str, Any]) -> set[str]:
    """The property shapes the official ``oneOf`` would accept, roughly (key sets only)."""
    keys = set(properties)
    shapes = set()
    if {"username", "password"} <= keys <= BASIC_KEYS:
        shapes.add("basic")
    if "token" in keys and keys <= BEARER_KEYS:
        shapes.add("bearer")
    if {"grantType", "clientId"} <= keys:
        shapes.add("oauth2")
    return shapes


def _is_open_in_official(value: Any, known: set[str]) -> bool:
    return isinstance(value, dict) and bool(set(value) - known)


#: keys whose values are user data, not workflow structure: never searched for structural keys.
_DATA_KEYS = frozenset({"data", "arguments", "constants", "metadata", "contextAttributes"})


def _objects(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for key, value in node.items():
            if key not in _DATA_KEYS:
                yield from _objects(value)
    elif isinstance(node, list):
        for value in node:
            yield from _objects(value)
