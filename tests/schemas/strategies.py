"""Hypothesis strategies: random well-formed pure Serverless Workflow 0.8 documents, and mutants.

``workflows()`` only builds documents the official 0.8 schema accepts and that exercise none of
our deliberate differences (no ``end: false``, no ``start`` object without ``schedule``, no
``sleep`` with both ``before`` and ``after``, timeouts keys allowed for the state type, …).
``mutate()`` then breaks one random spot of such a document.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

NAMES = ["A", "B", "Check", "Send Email", "wait-1", "Final", "x"]
EXPRESSIONS = ["${ .a }", "${ .items | length }", ".count", "${ {b: .b} }"]
DURATIONS = ["PT1S", "PT5M", "P1D", "PT0.5S"]

names = st.sampled_from(NAMES)
expressions = st.sampled_from(EXPRESSIONS)
durations = st.sampled_from(DURATIONS)
strings = st.sampled_from(["a", "order", "1.0", "file://defs.json"])
metadata = st.dictionaries(st.sampled_from(["k", "owner", "team"]), strings, max_size=2)
invoke = st.sampled_from(["sync", "async"])


def opt(**kwargs: st.SearchStrategy[Any]) -> dict[str, st.SearchStrategy[Any]]:
    return kwargs


produce_event = st.fixed_dictionaries(
    {"eventRef": names},
    optional=opt(data=st.one_of(expressions, st.just({"x": 1})), contextAttributes=st.just({"a": "b"})),
)
transition = st.one_of(
    names,
    st.fixed_dictionaries({"nextState": names},
                          optional=opt(compensate=st.booleans(), produceEvents=st.lists(produce_event, max_size=2))),
)
continue_as = st.one_of(
    names,
    st.fixed_dictionaries({"workflowId": names},
                          optional=opt(version=strings, data=expressions, workflowExecTimeout=durations)),
)
end = st.one_of(
    st.just(True),
    st.fixed_dictionaries({}, optional=opt(terminate=st.booleans(), compensate=st.booleans(),
                                           produceEvents=st.lists(produce_event, max_size=2),
                                           continueAs=continue_as)),
)
exit_ = st.one_of(st.builds(lambda t: {"transition": t}, transition), st.builds(lambda e: {"end": e}, end))

function_ref = st.one_of(
    names,
    st.fixed_dictionaries({"refName": names},
                          optional=opt(arguments=st.just({"a": "${ .a }"}), selectionSet=strings, invoke=invoke)),
)
event_ref = st.fixed_dictionaries(
    {"triggerEventRef": names, "resultEventRef": names},
    optional=opt(resultEventTimeout=durations, data=expressions, contextAttributes=st.just({"c": "d"}), invoke=invoke),
)
subflow_ref = st.one_of(
    names,
    st.fixed_dictionaries({"workflowId": names},
                          optional=opt(version=strings, invoke=invoke,
                                       onParentComplete=st.sampled_from(["continue", "terminate"]))),
)
action_data_filter = st.fixed_dictionaries(
    {}, optional=opt(fromStateData=expressions, useResults=st.booleans(), results=expressions, toStateData=expressions))


@st.composite
def actions_(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["functionRef", "eventRef", "subFlowRef"]))
    action: dict[str, Any] = {kind: draw({"functionRef": function_ref, "eventRef": event_ref, "subFlowRef": subflow_ref}[kind])}
    action.update(draw(st.fixed_dictionaries({}, optional=opt(
        id=strings, name=names, retryRef=names,
        sleep=st.one_of(st.builds(lambda d: {"before": d}, durations), st.builds(lambda d: {"after": d}, durations)),
        retryableErrors=st.lists(names, min_size=1, max_size=2),
        nonRetryableErrors=st.lists(names, min_size=1, max_size=2),
        actionDataFilter=action_data_filter, condition=expressions))))
    return action


action = actions_()
action_list = st.lists(action, max_size=3)
state_data_filter = st.fixed_dictionaries({}, optional=opt(input=expressions, output=expressions))
event_data_filter = st.fixed_dictionaries({}, optional=opt(useData=st.booleans(), data=expressions, toStateData=expressions))


@st.composite
def on_error(draw: st.DrawFn) -> dict[str, Any]:
    handler = draw(st.one_of(st.builds(lambda n: {"errorRef": n}, names),
                             st.builds(lambda ns: {"errorRefs": ns}, st.lists(names, min_size=1, max_size=2))))
    handler.update(draw(exit_))
    return handler


def timeouts(*keys: str) -> st.SearchStrategy[dict[str, Any]]:
    values = {"stateExecTimeout": st.one_of(durations, st.fixed_dictionaries({"total": durations}, optional=opt(single=durations)))}
    return st.fixed_dictionaries({}, optional={k: values.get(k, durations) for k in keys})


STATE_TIMEOUTS = {
    "sleep": ("stateExecTimeout",), "inject": ("stateExecTimeout",),
    "operation": ("stateExecTimeout", "actionExecTimeout"), "foreach": ("stateExecTimeout", "actionExecTimeout"),
    "event": ("stateExecTimeout", "actionExecTimeout", "eventTimeout"),
    "callback": ("stateExecTimeout", "actionExecTimeout", "eventTimeout"),
    "parallel": ("stateExecTimeout", "branchExecTimeout"),
}


def _specific(state_type: str) -> st.SearchStrategy[dict[str, Any]]:
    if state_type == "sleep":
        return st.fixed_dictionaries({"duration": durations})
    if state_type == "inject":
        return st.fixed_dictionaries({"data": st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 3), max_size=2)})
    if state_type == "operation":
        return st.fixed_dictionaries({"actions": action_list},
                                     optional=opt(actionMode=st.sampled_from(["sequential", "parallel"])))
    if state_type == "foreach":
        return st.fixed_dictionaries({"inputCollection": expressions, "actions": action_list}, optional=opt(
            outputCollection=expressions, iterationParam=names, batchSize=st.one_of(st.integers(0, 5), st.just("2")),
            mode=st.sampled_from(["parallel", "sequential"])))
    if state_type == "event":
        on_events = st.fixed_dictionaries({"eventRefs": st.lists(names, min_size=1, max_size=2, unique=True)}, optional=opt(
            actionMode=st.sampled_from(["sequential", "parallel"]), actions=action_list, eventDataFilter=event_data_filter))
        return st.fixed_dictionaries({"onEvents": st.lists(on_events, min_size=1, max_size=2)},
                                     optional=opt(exclusive=st.booleans()))
    if state_type == "callback":
        return st.fixed_dictionaries({"action": action, "eventRef": names}, optional=opt(eventDataFilter=event_data_filter))
    assert state_type == "parallel"
    branch = st.fixed_dictionaries({"name": names, "actions": action_list}, optional=opt(
        timeouts=st.fixed_dictionaries({}, optional=opt(actionExecTimeout=durations, branchExecTimeout=durations))))
    return st.one_of(
        st.fixed_dictionaries({"branches": st.lists(branch, max_size=3)},
                              optional=opt(completionType=st.just("allOf"))),
        st.fixed_dictionaries({"branches": st.lists(branch, max_size=3), "completionType": st.just("atLeast"),
                               "numCompleted": st.one_of(st.integers(0, 3), st.just("1"))}),
    )


@st.composite
def non_switch_state(draw: st.DrawFn) -> dict[str, Any]:
    state_type = draw(st.sampled_from(sorted(STATE_TIMEOUTS)))
    state: dict[str, Any] = {"name": draw(names), "type": state_type}
    state.update(draw(_specific(state_type)))
    common = opt(stateDataFilter=state_data_filter, compensatedBy=names, metadata=metadata,
                 timeouts=timeouts(*STATE_TIMEOUTS[state_type]), id=strings)
    if state_type != "inject":
        common["onErrors"] = st.lists(on_error(), max_size=2)
    state.update(draw(st.fixed_dictionaries({}, optional=common)))
    compensation = state_type != "event" and draw(st.booleans()) and draw(st.booleans())
    if compensation:
        state["usedForCompensation"] = True
        if draw(st.booleans()):
            state.update(draw(exit_))
    else:
        if state_type != "event" and draw(st.booleans()):
            state["usedForCompensation"] = False
        state.update(draw(exit_))
    return state


@st.composite
def switch_state(draw: st.DrawFn) -> dict[str, Any]:
    state: dict[str, Any] = {"name": draw(names), "type": "switch"}
    default = draw(exit_)
    if draw(st.booleans()):
        conditions = st.lists(st.builds(lambda c, e, n: {"condition": c, **e, **n}, expressions, exit_,
                                        st.fixed_dictionaries({}, optional=opt(name=names, metadata=metadata))), max_size=3)
        state["dataConditions"] = draw(conditions)
        state.update(draw(st.fixed_dictionaries({}, optional=opt(timeouts=timeouts("stateExecTimeout")))))
    else:
        conditions = st.lists(st.builds(lambda r, e, n: {"eventRef": r, **e, **n}, names, exit_,
                                        st.fixed_dictionaries({}, optional=opt(name=names, eventDataFilter=event_data_filter))),
                              max_size=3)
        state["eventConditions"] = draw(conditions)
        state.update(draw(st.fixed_dictionaries({}, optional=opt(timeouts=timeouts("stateExecTimeout", "eventTimeout")))))
    state["defaultCondition"] = default
    state.update(draw(st.fixed_dictionaries({}, optional=opt(
        stateDataFilter=state_data_filter, onErrors=st.lists(on_error(), max_size=2), compensatedBy=names,
        usedForCompensation=st.booleans(), metadata=metadata))))
    return state


state = st.one_of(non_switch_state(), switch_state())

function_def = st.fixed_dictionaries({"name": names, "operation": strings}, optional=opt(
    type=st.sampled_from(["rest", "asyncapi", "rpc", "graphql", "odata", "expression", "custom"]),
    authRef=names, metadata=metadata))
event_def = st.one_of(
    st.fixed_dictionaries({"name": names, "type": strings, "source": strings}, optional=opt(
        kind=st.just("consumed"), dataOnly=st.booleans(), metadata=metadata,
        correlation=st.lists(st.fixed_dictionaries({"contextAttributeName": names}, optional=opt(contextAttributeValue=strings)),
                             min_size=1, max_size=2))),
    st.fixed_dictionaries({"name": names, "type": strings, "kind": st.just("produced")}, optional=opt(source=strings)),
)
error_def = st.fixed_dictionaries({"name": names}, optional=opt(code=st.sampled_from(["404", "java.lang.RuntimeException"]),
                                                                 description=strings))
retry_def = st.fixed_dictionaries({"name": names, "maxAttempts": st.one_of(st.integers(1, 10), st.just("3"))}, optional=opt(
    delay=durations, maxDelay=durations, increment=durations, multiplier=st.sampled_from([1, 1.5, 2, "2"]),
    jitter=st.one_of(st.sampled_from([0, 0.25, 1]), durations)))
auth_def = st.one_of(
    st.fixed_dictionaries({"name": names, "properties": st.fixed_dictionaries({"username": strings, "password": expressions})},
                          optional=opt(scheme=st.just("basic"))),
    st.fixed_dictionaries({"name": names, "scheme": st.just("bearer"), "properties": st.fixed_dictionaries({"token": expressions})}),
    st.fixed_dictionaries({"name": names, "scheme": st.just("oauth2"), "properties": st.fixed_dictionaries(
        {"grantType": st.sampled_from(["password", "clientCredentials", "tokenExchange"]), "clientId": strings},
        optional=opt(clientSecret=expressions, scopes=st.lists(strings, min_size=1, max_size=2), authority=strings))}),
    st.fixed_dictionaries({"name": names, "properties": expressions}),
)
schedule = st.one_of(
    st.just("R/PT2H"),
    st.fixed_dictionaries({"interval": st.just("R/PT1H")}, optional=opt(timezone=st.just("UTC"))),
    st.fixed_dictionaries({"cron": st.one_of(st.just("0 * * * * ?"), st.fixed_dictionaries(
        {"expression": st.just("0 * * * * ?")}, optional=opt(validUntil=st.just("2030-01-01T00:00:00Z"))))}),
)


def _uri_or_list(item: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.just("file://defs.json"), st.lists(item, min_size=1, max_size=3))


@st.composite
def workflows(draw: st.DrawFn) -> dict[str, Any]:
    """A random workflow valid under the official 0.8 schema and ours alike."""
    document: dict[str, Any] = {draw(st.sampled_from(["id", "key"])): draw(names), "specVersion": "0.8"}
    document.update(draw(st.fixed_dictionaries({}, optional=opt(
        name=names, version=strings, description=strings, annotations=st.lists(strings, min_size=1, max_size=2),
        expressionLang=st.just("jq"), keepActive=st.booleans(), autoRetries=st.booleans(), metadata=metadata,
        start=st.one_of(names, st.fixed_dictionaries({"stateName": names, "schedule": schedule})),
        dataInputSchema=st.one_of(strings, st.fixed_dictionaries({"schema": strings, "failOnValidationErrors": st.booleans()})),
        secrets=st.one_of(strings, st.lists(names, min_size=1, max_size=2)),
        constants=st.one_of(strings, st.just({"AGE": {"MIN_ADULT": 18}})),
        timeouts=st.one_of(strings, st.fixed_dictionaries({}, optional=opt(
            workflowExecTimeout=st.one_of(durations, st.fixed_dictionaries({"duration": durations}, optional=opt(
                interrupt=st.booleans(), runBefore=names))),
            stateExecTimeout=durations, actionExecTimeout=durations, branchExecTimeout=durations, eventTimeout=durations))),
        functions=_uri_or_list(function_def), events=_uri_or_list(event_def), errors=_uri_or_list(error_def),
        retries=_uri_or_list(retry_def), auth=_uri_or_list(auth_def),
        x_extension=st.just({"anything": [1, 2]})))))
    document["states"] = draw(st.lists(state, min_size=1, max_size=4))
    return document


JUNK = [None, 0, -1, 1.5, "", "x", [], {}, True, False, [1], {"bogus": 1}]
STATE_TYPES = ["sleep", "event", "operation", "parallel", "switch", "inject", "foreach", "callback"]
#: field names of 0.8 objects, transplanted onto random objects by the "transplant" mutation.
FIELD_NAMES = ["actions", "action", "branches", "data", "duration", "end", "transition", "eventRef", "eventRefs",
               "onEvents", "onErrors", "dataConditions", "eventConditions", "defaultCondition", "timeouts",
               "usedForCompensation", "compensatedBy", "stateDataFilter", "eventDataFilter", "actionDataFilter",
               "functionRef", "subFlowRef", "sleep", "condition", "inputCollection", "completionType",
               "numCompleted", "exclusive", "mode", "schedule", "stateName", "workflowId", "refName",
               "errorRef", "errorRefs", "produceEvents", "continueAs", "terminate", "compensate", "nextState",
               "metadata", "name", "type", "id", "key", "retryRef", "invoke", "eventTimeout", "stateExecTimeout"]


def paths_of(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += paths_of(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += paths_of(value, prefix + (index,))
    return found


@st.composite
def mutants(draw: st.DrawFn) -> dict[str, Any]:
    """A random valid workflow with one spot broken (which may or may not make it invalid)."""
    document = copy.deepcopy(draw(workflows()))
    path = draw(st.sampled_from(paths_of(document)))
    operation = draw(st.sampled_from(["delete", "replace", "add-key", "end-and-transition", "empty",
                                      "retype", "transplant", "transplant"]))
    if not path:
        document.pop(draw(st.sampled_from(sorted(document))))
        return document
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    target = parent[last]
    if operation == "delete":
        del parent[last]
    elif operation == "replace":
        parent[last] = draw(st.sampled_from(JUNK))
    elif operation == "add-key" and isinstance(target, dict):
        target[draw(st.sampled_from(["bogus", "end", "transition", "name", "type", "actions", "eventRef"]))] = draw(
            st.sampled_from(["x", True, [], {}]))
    elif operation == "retype" and isinstance(target, dict):
        target["type"] = draw(st.sampled_from(STATE_TYPES))
    elif operation == "transplant" and isinstance(target, dict):
        # a known field name with a value that occurs somewhere in this document
        donor_path = draw(st.sampled_from(paths_of(document)))
        value: Any = document
        for step in donor_path:
            value = value[step]
        target[draw(st.sampled_from(FIELD_NAMES))] = copy.deepcopy(value)
    elif operation == "end-and-transition" and isinstance(target, dict):
        target["end"] = True
        target["transition"] = "A"
    elif isinstance(target, (dict, list)):
        target.clear()
    else:
        parent[last] = draw(st.sampled_from(JUNK))
    return document
