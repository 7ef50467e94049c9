"""The compiled plan: defaults, durations, templates, references and clear definition errors."""

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from xflow_runtime.errors import DefinitionError
from xflow_runtime.plan import compile_plan, parse_duration, register_state_compiler
from xflow_runtime.plan.states import ForEachState, OperationState, State
from xflow_runtime.plan.templates import Constant, ObjectTemplate, compile_template

from tests.interpreter.support import plan, run


def test_defaults_are_applied():
    compiled = plan("""
functions: [{name: f, operation: "api.json#op"}]
events: [{name: e, type: t, source: s}]
states:
- {name: first, type: operation, actions: [{functionRef: f}], transition: each}
- {name: each, type: foreach, inputCollection: .xs, actions: [{functionRef: f}], transition: wait}
- {name: wait, type: event, onEvents: [{eventRefs: [e]}], end: true}
""")
    assert compiled.start == "first" and not compiled.keep_active and not compiled.auto_retries
    first = compiled.states["first"]
    assert isinstance(first, OperationState) and first.action_mode == "sequential"
    action = first.actions[0]
    assert action.invoke == "sync" and action.filter.use_results and action.ref.function.type == "rest"
    each = compiled.states["each"]
    assert isinstance(each, ForEachState) and each.mode == "parallel" and each.batch_size is None
    wait = compiled.states["wait"]
    assert wait.exclusive and compiled.events["e"].kind == "consumed" and compiled.events["e"].data_only


@pytest.mark.parametrize("text, seconds", [
    ("PT1S", 1), ("PT1M30S", 90), ("P1D", 86400), ("P1W", 604800), ("PT0.5S", 0.5), ("P1DT1H", 90000),
    ("pt2h", 7200),
])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["PT30D", "PT2W", "1 hour", "P", "PT", "-PT1S", None])
def test_bad_durations_are_definition_errors(text):
    with pytest.raises(DefinitionError) as info:
        parse_duration(text, where="/states/0/duration")
    assert "/states/0/duration" in str(info.value)


def test_pt30d_error_suggests_the_fix():
    with pytest.raises(DefinitionError, match="write 'P30D'"):
        parse_duration("PT30D")


@settings(deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 59), st.integers(0, 59))
def test_duration_parts_add_up(hours, minutes, seconds):
    assert parse_duration(f"PT{hours}H{minutes}M{seconds}S") == hours * 3600 + minutes * 60 + seconds


def test_templates_fold_constants_and_compile_only_whole_expressions():
    assert isinstance(compile_template({"a": [1, "x"], "b": "Hi ${ .x }"}), Constant)
    template = compile_template({"a": "${ .x }", "b": "lit"})
    assert isinstance(template, ObjectTemplate)
    assert template.render({"x": 5}, {}) == {"a": 5, "b": "lit"}


@pytest.mark.parametrize("document, message", [
    ("states: [{name: s, type: teleport, end: true}]", "unknown state type 'teleport'"),
    ("states: [{name: s, type: inject, data: {}, transition: nowhere}]", "state 'nowhere' does not exist"),
    ("states: [{name: s, type: operation, actions: [{functionRef: ghost}], end: true}]", "function 'ghost' is not defined"),
    ("states: [{name: s, type: inject, data: {}, end: true}, {name: s, type: inject, data: {}, end: true}]",
     "used twice"),
    ("states: [{name: s, type: switch, dataConditions: [{condition: .a, end: true}], defaultCondition: 5}]",
     "defaultCondition"),
    ("states: [{name: s, type: inject, data: {}, stateDataFilter: {input: '.a ||| b'}, end: true}]",
     "/states/0/stateDataFilter/input"),
    ("states: [{name: s, type: foreach, inputCollection: .a, batchSize: 0, actions: [], end: true}]", "batchSize"),
    ("states: [{name: s, type: sleep, duration: PT2W, end: true}]", "P2W"),
    ("start: missing\nstates: [{name: s, type: inject, data: {}, end: true}]", "/start"),
    ("errors: [{name: e, code: '/(unclosed/'}]\nstates: [{name: s, type: inject, data: {}, end: true}]",
     "regular expression"),
])
def test_definition_errors_are_clear(document, message):
    with pytest.raises(DefinitionError) as info:
        plan(document)
    assert message in str(info.value)


def test_time_related_fields_are_seconds_and_state_timeouts_override():
    compiled = plan("""
timeouts: {actionExecTimeout: PT10S, eventTimeout: PT1M, workflowExecTimeout: {duration: PT1H, interrupt: false}}
retries: [{name: r, maxAttempts: "3", delay: PT2S, multiplier: 1.5, jitter: 0.1, maxDelay: PT1M}]
states:
- name: s
  type: inject
  data: {}
  timeouts: {stateExecTimeout: {single: PT1S, total: PT5S}, actionExecTimeout: PT3S}
  end: true
""")
    timeouts = compiled.states["s"].timeouts
    assert (timeouts.state_total, timeouts.state_single, timeouts.action, timeouts.event) == (5, 1, 3, 60)
    assert compiled.workflow_exec_timeout.duration == 3600 and not compiled.workflow_exec_timeout.interrupt
    retry = compiled.retries["r"]
    assert (retry.max_attempts, retry.delay, retry.multiplier, retry.jitter_fraction, retry.max_delay) == (3, 2, 1.5, 0.1, 60)


def test_end_false_means_no_end_and_continue_as_implies_terminate():
    compiled = plan("""
states:
- {name: a, type: inject, data: {}, end: false, transition: b}
- {name: b, type: inject, data: {}, end: {continueAs: b2}}
""")
    assert compiled.states["a"].exit.next_state == "b"
    assert compiled.states["b"].exit.terminate and compiled.states["b"].exit.continue_as.workflow_id == "b2"


def test_extension_state_compiler_registry():
    from dataclasses import dataclass

    @dataclass(frozen=True, kw_only=True)
    class EchoState(State):
        text: str

    register_state_compiler("echo-test", lambda raw, ctx, common: EchoState(**common, text=raw["text"]))
    compiled = plan("states: [{name: s, type: echo-test, text: hi, end: true}]")
    assert compiled.states["s"].text == "hi" and compiled.states["s"].exit is not None


async def test_extension_state_handler_registry():
    from dataclasses import dataclass

    from xflow_runtime.interpreter import register_state_handler

    @dataclass(frozen=True, kw_only=True)
    class ShoutState(State):
        key: str

    async def shout(state, data, run, scope):
        return {**data, state.key: data[state.key].upper()}, None

    register_state_compiler("shout-test", lambda raw, ctx, common: ShoutState(**common, key=raw["key"]))
    register_state_handler("shout-test", shout)
    result = await run("states: [{name: s, type: shout-test, key: w, end: true}]", {"w": "hi"})
    assert result.output == {"w": "HI"}


def test_plan_is_frozen():
    compiled = plan("states: [{name: s, type: inject, data: {}, end: true}]")
    with pytest.raises(Exception):
        compiled.start = "other"  # type: ignore[misc]


def test_unresolved_uri_sections_get_a_loader_hint():
    with pytest.raises(DefinitionError, match="load_workflow"):
        compile_plan(yaml.safe_load("id: x\nspecVersion: '0.8'\nfunctions: file://f.json\n"
                                    "states: [{name: s, type: inject, data: {}, end: true}]"))


VALID = {
    "id": "fuzz", "specVersion": "0.8",
    "functions": [{"name": "f", "type": "custom", "operation": "f"}],
    "events": [{"name": "e", "type": "t", "source": "s", "correlation": [{"contextAttributeName": "k"}]}],
    "errors": [{"name": "x", "code": "ValueError"}],
    "retries": [{"name": "r", "maxAttempts": 3, "delay": "PT1S"}],
    "states": [
        {"name": "a", "type": "operation", "actions": [{"functionRef": {"refName": "f", "arguments": {"v": "${ .v }"}},
                                                         "retryRef": "r"}],
         "onErrors": [{"errorRef": "x", "end": True}], "transition": "b"},
        {"name": "b", "type": "switch", "dataConditions": [{"condition": ".v", "transition": "c"}],
         "defaultCondition": {"end": True}},
        {"name": "c", "type": "foreach", "inputCollection": ".xs", "actions": [{"functionRef": "f"}],
         "transition": "d"},
        {"name": "d", "type": "event", "onEvents": [{"eventRefs": ["e"]}], "end": True},
    ],
}

_junk = st.none() | st.booleans() | st.integers() | st.text(max_size=4) | st.lists(st.integers(), max_size=2) \
    | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, prefix + (index,))


_ALL_PATHS = [path for path in _paths(VALID) if path]


@settings(deadline=None, max_examples=150)
@given(st.sampled_from(_ALL_PATHS), _junk)
def test_any_malformed_value_is_a_definition_error_never_a_traceback(path, junk):
    import copy

    document = copy.deepcopy(VALID)
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = junk
    try:
        compile_plan(document)
    except DefinitionError as exc:
        assert str(exc)


@pytest.mark.parametrize("jitter, fraction, seconds", [(0.25, 0.25, 0), ("0.5", 0.5, 0), ("PT2S", 0, 2)])
def test_jitter_forms(jitter, fraction, seconds):
    from xflow_runtime.plan.definitions import compile_retry_def

    retry = compile_retry_def({"name": "r", "maxAttempts": 2, "jitter": jitter}, "/retries/0")
    assert (retry.jitter_fraction, retry.jitter_seconds) == (fraction, seconds)


@pytest.mark.parametrize("written, name", [(None, "item"), ("tx", "tx"), ("${ .tx }", "tx")])
def test_iteration_param_forms(written, name):
    param = "" if written is None else f"iterationParam: '{written}'\n  "
    compiled = plan(f"""
functions: [{{name: f, type: custom, operation: f}}]
states:
- name: each
  type: foreach
  inputCollection: .xs
  {param}actions: [{{functionRef: f}}]
  end: true
""")
    assert compiled.states["each"].iteration_param == name
