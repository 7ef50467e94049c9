"""Lint rules on references to functions, events, retries and errors."""

from __future__ import annotations

from tests.definition.helpers import BASE, codes, lines

AGENT = """  - name: Agent
    type: aiagent
    agentName: helper
    systemMessage: You help.
    userMessage: "${ .question }"
    output: {type: object}
    tools:
      - name: lookup
        description: look things up
        execution:
          functionRef: {tool_ref}
    agentOutcomes:
      - condition: "${ $agentOutcome.returnValues != null }"
        transition: Done
    end: true
"""


def test_xf104_unknown_function_in_action() -> None:
    assert lines(BASE.replace("refName: greet", "refName: greeet")) == [
        "wf.yaml:29:20 /states/0/actions/0/functionRef/refName: function 'greeet' is not defined in functions "
        "(did you mean 'greet'?) [XF104 unknown-function]"]
    string_form = BASE.replace("      - functionRef:\n          refName: greet\n          arguments:\n"
                               "            who: \"${ .name }\"\n", "      - functionRef: nothing\n")
    assert lines(string_form) == ["wf.yaml:28:22 /states/0/actions/0/functionRef: function 'nothing' is not "
                                  "defined in functions [XF104 unknown-function]"]


def test_xf104_tool_execution_binding_must_name_a_function() -> None:
    def with_tool(ref: str) -> str:
        return BASE.replace("      end: true\n", "      transition: Agent\n") + AGENT.replace("{tool_ref}", ref)

    assert lines(with_tool("search")) == [
        "wf.yaml:64:24 /states/3/tools/0/execution/functionRef: function 'search' is not defined in functions "
        "[XF104 unknown-function]"]
    assert codes(with_tool("greet")) == []
    assert codes(with_tool("{refName: greet, arguments: {q: '${ .query }'}}")) == []


def test_xf105_unknown_event() -> None:
    assert lines(BASE.replace("- eventRef: Pong", "- eventRef: Pang")) == [
        "wf.yaml:52:21 /states/2/end/produceEvents/0/eventRef: event 'Pang' is not defined in events "
        "(did you mean 'Pong'?) [XF105 unknown-event]"]
    assert "XF105" not in codes(BASE)


def test_xf106_consuming_a_produced_event_and_producing_a_consumed_one() -> None:
    # Producing a consumed event is SonataFlow's relaxation XF143 (a warning; an error when strict).
    assert lines(BASE.replace("- eventRef: Pong", "- eventRef: Ping")) == [
        "wf.yaml:52:21 /states/2/end/produceEvents/0/eventRef: warning: event 'Ping' is defined with kind "
        "'consumed' but is produced here; produced anyway (SonataFlow's behaviour); declare it with kind: produced "
        "(or a second, produced definition) [XF143 produced-consumed-event]"]
    waiting = BASE.replace("    defaultCondition:\n      end: true\n", "    defaultCondition:\n      transition: Wait\n") \
        + "  - name: Wait\n    type: event\n    onEvents:\n      - eventRefs: [Pong]\n    end: true\n"
    assert lines(waiting) == [
        "wf.yaml:57:21 /states/3/onEvents/0/eventRefs/0: this reference consumes event 'Pong', which is defined "
        "with kind 'produced'; expected kind 'consumed' [XF106 wrong-event-kind]"]
    assert codes(waiting.replace("eventRefs: [Pong]", "eventRefs: [Ping]")) == []


def test_xf106_action_event_ref_trigger_and_result() -> None:
    action = ("      - eventRef:\n          triggerEventRef: {trigger}\n          resultEventRef: {result}\n"
              "    transition: Decide\n")
    text = BASE.replace("    transition: Decide\n", "", 1)
    swapped = text.replace("          toStateData: .greeting\n", "          toStateData: .greeting\n"
                           + action.format(trigger="Ping", result="Pong"))
    assert codes(swapped) == ["XF143", "XF106"]
    correct = text.replace("          toStateData: .greeting\n", "          toStateData: .greeting\n"
                           + action.format(trigger="Pong", result="Ping"))
    assert codes(correct) == []


def test_xf107_unknown_retry() -> None:
    assert lines(BASE.replace("retryRef: Twice", "retryRef: Thrice")) == [
        "wf.yaml:32:19 /states/0/actions/0/retryRef: retry strategy 'Thrice' is not defined in retries (did you mean 'Twice'?) "
        "[XF107 unknown-retry]"]
    assert "XF107" not in codes(BASE)


def test_xf108_unknown_error_in_on_errors_and_retryable_errors() -> None:
    assert lines(BASE.replace("errorRef: Boom", "errorRef: Bang")) == [
        "wf.yaml:36:19 /states/0/onErrors/0/errorRef: error 'Bang' is not defined in errors [XF108 unknown-error]"]
    listed = BASE.replace("retryRef: Twice\n", "retryRef: Twice\n        retryableErrors: [Boom, Crash]\n")
    assert lines(listed) == [
        "wf.yaml:33:33 /states/0/actions/0/retryableErrors/1: error 'Crash' is not defined in errors "
        "[XF108 unknown-error]"]
    refs = BASE.replace("- errorRef: Boom", "- errorRefs: [Boom, Bust]")
    assert codes(refs) == ["XF108"]
    assert codes(BASE.replace("- errorRef: Boom", "- errorRefs: [Boom]")) == []


def test_reference_checks_skip_a_malformed_section() -> None:
    """A broken `functions` section is reported once by the schema, not once per functionRef."""
    text = BASE.replace("functions:\n  - name: greet", "functions: 42\nx-old:\n  - name: greet")
    assert codes(text) == ["XF053"]


def test_xf104_tool_without_execution_binds_the_function_of_the_same_name() -> None:
    base = BASE.replace("      end: true\n", "      transition: Agent\n") + AGENT.replace("{tool_ref}", "greet")
    unbound = base.replace("        execution:\n          functionRef: greet\n", "")
    assert lines(unbound) == [
        "wf.yaml:61:15 /states/3/tools/0/name: tool 'lookup' has no execution and no workflow function is named "
        "'lookup'; add execution: {functionRef: …} or {subFlowRef: …} [XF104 unknown-function]"]
    assert codes(unbound.replace("name: lookup", "name: greet")) == []
