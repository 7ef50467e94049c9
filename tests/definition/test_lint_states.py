"""Lint rules on states and transitions: each with a failing and a passing case, positions asserted."""

from __future__ import annotations

from tests.definition.helpers import BASE, codes, lines


def test_xf101_unknown_transition_target() -> None:
    assert lines(BASE.replace("transition: Decide", "transition: Decid")) == [
        "wf.yaml:38:17 /states/0/transition: transition target 'Decid' is not a state of this workflow "
        "(did you mean 'Decide'?) [XF101 unknown-transition-target]"]
    assert codes(BASE) == []


def test_xf101_covers_conditions_default_on_errors_and_object_form() -> None:
    text = (BASE.replace("      - errorRef: Boom\n        transition: Done\n",
                         "      - errorRef: Boom\n        transition: Away\n")
            .replace("        transition: Done\n    defaultCondition:\n      end: true\n",
                     "        transition: {nextState: Gone}\n    defaultCondition:\n      transition: Lost\n"))
    assert lines(text) == [
        "wf.yaml:37:21 /states/0/onErrors/0/transition: transition target 'Away' is not a state of this workflow "
        "[XF101 unknown-transition-target]",
        "wf.yaml:43:33 /states/1/dataConditions/0/transition/nextState: transition target 'Gone' is not a state "
        "of this workflow (did you mean 'Done'?) [XF101 unknown-transition-target]",
        "wf.yaml:45:19 /states/1/defaultCondition/transition: transition target 'Lost' is not a state of this "
        "workflow [XF101 unknown-transition-target]",
    ]


def test_xf102_duplicate_state_name() -> None:
    text = BASE.replace("  - name: Done\n", "  - name: Greet\n").replace("transition: Done", "transition: Greet")
    assert "wf.yaml:46:11 /states/2/name: duplicate state name 'Greet' (first used at /states/0) " \
           "[XF102 duplicate-state-name]" in lines(text)
    assert "XF102" not in codes(BASE)


def test_xf103_unknown_start_state() -> None:
    assert lines(BASE.replace("start: Greet", "start: Greeting")) == [
        "wf.yaml:3:8 /start: start state 'Greeting' does not exist (did you mean 'Greet'?) "
        "[XF103 unknown-start-state]"]
    assert lines(BASE.replace("start: Greet", "start: {stateName: Nope, schedule: R/PT2H}")) == [
        "wf.yaml:3:20 /start/stateName: start state 'Nope' does not exist [XF103 unknown-start-state]"]


def test_xf114_unknown_run_before_state() -> None:
    extra = "timeouts:\n  workflowExecTimeout:\n    duration: PT1M\n    runBefore: {}\n"
    assert lines(BASE.replace("start: Greet\n", "start: Greet\n" + extra.replace("{}", "Cleanup"))) == [
        "wf.yaml:7:16 /timeouts/workflowExecTimeout/runBefore: runBefore state 'Cleanup' does not exist "
        "[XF114 unknown-run-before-state]"]
    assert lines(BASE.replace("start: Greet\n", "start: Greet\n" + extra.replace("{}", "Done"))) == []


def test_xf115_duplicate_definition_names() -> None:
    text = BASE.replace("  - name: inc\n", "  - name: greet\n").replace("  - name: Pong\n", "  - name: Ping\n")
    assert lines(text) == [
        "wf.yaml:8:11 /functions/1/name: duplicate functions name 'greet' (first defined at /functions/0) "
        "[XF115 duplicate-definition-name]",
        "wf.yaml:15:11 /events/1/name: duplicate events name 'Ping' (first defined at /events/0) "
        "[XF115 duplicate-definition-name]",
        "wf.yaml:52:21 /states/2/end/produceEvents/0/eventRef: event 'Pong' is not defined in events (did you "
        "mean 'Ping'?) [XF105 unknown-event]",
    ]


def test_xf115_passing_case_and_duplicate_tools() -> None:
    from tests.definition.test_lint_refs import AGENT

    assert "XF115" not in codes(BASE)
    agent = BASE.replace("      end: true\n", "      transition: Agent\n") + AGENT.replace("{tool_ref}", "greet")
    tool = "      - name: lookup\n        description: look things up\n        execution:\n          functionRef: greet\n"
    twice = agent.replace(tool, tool + tool)
    assert lines(twice) == ["wf.yaml:65:15 /states/3/tools/1/name: duplicate tool name 'lookup' (first defined at "
                            "/states/3/tools/0) [XF115 duplicate-definition-name]"]


def test_xf116_switch_with_both_kinds_of_conditions() -> None:
    assert "XF116" not in codes(BASE)
    text = BASE.replace("    defaultCondition:\n", "    eventConditions:\n      - eventRef: Ping\n"
                                                    "        transition: Done\n    defaultCondition:\n")
    assert lines(text) == ["wf.yaml:44:5 /states/1/eventConditions: a switch state has either dataConditions or "
                           "eventConditions, not both [XF116 switch-mixed-conditions]"]  # replaces the schema's
    # "unknown property 'dataConditions'", which describes a symptom


FOREACH = """  - name: Each
    type: foreach
    inputCollection: .items
    iterationParam: item
    batchSize: {size}
    actions:
      - functionRef: greet
    end: true
"""


def test_xf117_foreach_batch_size_below_one() -> None:
    def with_size(size: str) -> str:
        return BASE.replace("      end: true\n", "      transition: Each\n") + FOREACH.format(size=size)

    assert lines(with_size("0")) == [
        "wf.yaml:58:16 /states/3/batchSize: batchSize 0 is below 1; expected a positive number of concurrent "
        "iterations [XF117 foreach-batch-size]"]
    assert codes(with_size('"0"')) == ["XF117"]
    assert codes(with_size("1")) == [] and codes(with_size("4")) == []


def test_xf118_data_switch_looping_on_itself() -> None:
    text = BASE.replace("    defaultCondition:\n      end: true\n", "    defaultCondition:\n      transition: Decide\n")
    assert lines(text) == [
        "wf.yaml:45:19 /states/1/defaultCondition/transition: a data-based switch that transitions to itself "
        "sees the same data every time and loops for ever; route the loop through a state that changes the data "
        "[XF118 self-transition]"]


def test_xf118_allows_meaningful_self_loops() -> None:
    polling = BASE.replace("    transition: Decide\n", "    transition: Greet\n")  # an operation may poll
    assert "XF118" not in codes(polling)
    on_error_retry = BASE.replace("      transition: Done\n    transition: Decide", "      transition: Greet\n"
                                  "    transition: Decide")
    assert "XF118" not in codes(on_error_retry)


def test_xf118_inject_looping_on_itself() -> None:
    text = BASE.replace("    end:\n      produceEvents:\n        - eventRef: Pong\n          data: .greeting\n",
                        "    transition: Done\n")
    assert codes(text) == ["XF118"]


def test_xf119_unreachable_state_is_a_warning() -> None:
    text = BASE + "  - name: Lonely\n    type: sleep\n    duration: PT1S\n    end: true\n"
    assert lines(text) == ["wf.yaml:54:5 /states/3: warning: state 'Lonely' is unreachable: no transition from "
                           "the start state leads to it [XF119 unreachable-state]"]
    reached = text.replace("    defaultCondition:\n      end: true\n",
                           "    defaultCondition:\n      transition: Lonely\n")
    assert codes(reached) == []


def test_xf119_warning_alone_does_not_fail_loading() -> None:
    from xflow_runtime.definition import load_workflow

    loaded = load_workflow(BASE + "  - name: Lonely\n    type: sleep\n    duration: PT1S\n    end: true\n")
    assert [d.code for d in loaded.diagnostics] == ["XF119"]
    assert loaded.diagnostics[0].severity == "warning"


def test_xf120_state_name_with_surrounding_whitespace() -> None:
    text = BASE.replace("  - name: Done\n", "  - name: 'Done '\n").replace("transition: Done", "transition: 'Done '")
    assert lines(text) == ["wf.yaml:46:11 /states/2/name: warning: state name 'Done ' has surrounding whitespace "
                           "or control characters; transitions must repeat it exactly [XF120 suspicious-state-name]"]


def test_state_names_in_any_case_style_are_accepted() -> None:
    """Decision: the 0.9 naming convention (lower-kebab) is not enforced; xFlow uses CamelCase names."""
    text = (BASE.replace("Decide", "decide-next").replace("Done", "All Done ✓"))
    assert codes(text) == []


def test_xf132_continue_as_with_terminate_false_is_a_warning() -> None:
    text = BASE.replace("    end:\n      produceEvents:", "    end:\n      terminate: false\n      continueAs: base\n"
                                                          "      produceEvents:")
    assert lines(text) == ["wf.yaml:51:7 /states/2/end/terminate: warning: continueAs always terminates this "
                           "instance; terminate: false is ignored [XF132 continue-as-not-terminating]"]
    assert codes(text.replace("terminate: false", "terminate: true")) == []
