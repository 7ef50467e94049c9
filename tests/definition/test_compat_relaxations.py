"""Each SonataFlow relaxation (XF140–XF147) is a warning by default and an error when strict;
XF148 (a JVM-only function) is a warning in both modes. specs/compat-sonataflow.md §2–3."""

from __future__ import annotations

import textwrap

import pytest

from xflow_runtime.definition import check_workflow, load_workflow
from xflow_runtime.errors import DefinitionError

BASE = """
id: relaxed
specVersion: "0.8"
events:
  - {name: Ping, type: ping, source: /here}
  - {name: Pong, type: pong, kind: produced}
functions:
  - {name: log, type: custom, operation: sysout}
states:
  - name: Work
    type: operation
    actions:
      - name: say
        functionRef:
          refName: log
          arguments: {message: hi}
    transition: Decide
  - name: Decide
    type: switch
    dataConditions:
      - condition: .go == true
        transition: Done
    defaultCondition:
      end: true
  - name: Done
    type: inject
    data: {ok: true}
    end:
      terminate: true
"""

#: (code, old text, new text, pointer of the relaxation)
RELAXATIONS = [
    ("XF140", 'specVersion: "0.8"\n', "", ""),
    ("XF141", "    defaultCondition:\n      end: true\n", "", "/states/1"),
    ("XF142", "      - name: say\n        functionRef:\n          refName: log\n          arguments: {message: hi}\n",
     "      - name: say\n        eventRef:\n          triggerEventRef: Pong\n", "/states/0/actions/0/eventRef"),
    ("XF143", "      terminate: true\n", "      produceEvents: [{eventRef: Ping}]\n",
     "/states/2/end/produceEvents/0/eventRef"),
    ("XF144", "arguments: {message: hi}", "arguments: '${ {message: .name} }'", "/states/0/actions/0/functionRef/arguments"),
    ("XF145", "      terminate: true\n", '      terminate: "true"\n', "/states/2/end/terminate"),
    ("XF146", "  - {name: Ping, type: ping, source: /here}\n", "  - {name: Ping, type: ping}\n", "/events/0"),
    ("XF147", "          refName: log\n", "          name: Logging\n          refName: log\n",
     "/states/0/actions/0/functionRef/name"),
]


def _diagnostics(text: str, strict: bool) -> list:
    return check_workflow(textwrap.dedent(text), source_name="wf.yaml", strict=strict).diagnostics


def test_the_base_document_is_clean_in_both_modes() -> None:
    assert _diagnostics(BASE, False) == [] and _diagnostics(BASE, True) == []


@pytest.mark.parametrize("code, old, new, pointer", RELAXATIONS, ids=[r[0] for r in RELAXATIONS])
def test_relaxation_is_a_warning_by_default_and_an_error_when_strict(code, old, new, pointer) -> None:
    assert old in BASE
    text = BASE.replace(old, new, 1)
    default = _diagnostics(text, False)
    assert [(d.code, d.severity, d.pointer) for d in default] == [(code, "warning", pointer)], [str(d) for d in default]
    load_workflow(text)  # loads and compiles
    strict = _diagnostics(text, True)
    assert [(d.code, d.severity) for d in strict] == [(code, "error")]
    with pytest.raises(DefinitionError) as raised:
        load_workflow(text, strict=True)
    assert code in str(raised.value)


def test_messages_say_what_the_strict_form_is() -> None:
    text = BASE.replace('specVersion: "0.8"\n', "").replace('      terminate: true\n', '      terminate: "true"\n')
    messages = {d.code: d.message for d in _diagnostics(text, False)}
    assert "write specVersion: '0.8'" in messages["XF140"]
    assert "write terminate: true without quotes" in messages["XF145"]
    switch = _diagnostics(BASE.replace("    defaultCondition:\n      end: true\n", ""), False)[0]
    assert "NoConditionMatched" in switch.message and "add defaultCondition" in switch.message


def test_string_booleans_become_booleans_in_the_document() -> None:
    text = BASE.replace("      terminate: true\n", '      terminate: "false"\n      compensate: "true"\n')
    loaded = load_workflow(text)
    assert loaded.document["states"][2]["end"] == {"terminate": False, "compensate": True}
    assert [d.code for d in loaded.diagnostics] == ["XF145", "XF145"]
    # Text that is not a boolean stays a schema error in both modes.
    assert [d.code for d in _diagnostics(BASE.replace("terminate: true", "terminate: sure"), False)] == ["XF053"]


def test_consuming_a_produced_event_stays_an_error() -> None:
    text = BASE.replace("      - condition: .go == true\n", "      - condition: .go == true\n") \
        .replace("  - {name: Ping, type: ping, source: /here}\n", "  - {name: Ping, type: ping, source: /here}\n"
                 "  - {name: Out, type: out, kind: produced}\n") \
        .replace("    type: switch\n    dataConditions:\n      - condition: .go == true\n        transition: Done\n",
                 "    type: switch\n    eventConditions:\n      - eventRef: Out\n        transition: Done\n")
    assert [(d.code, d.severity) for d in _diagnostics(text, False)] == [("XF106", "error")]


@pytest.mark.parametrize("operation", ["service:java:org.acme.Svc::run", "camel:direct:numbers", "dmn:model",
                                       "knative:services.v1.serving.knative.dev/fn", "script:python",
                                       "rpc:division"])
def test_xf148_jvm_only_function_is_a_warning_in_both_modes(operation) -> None:
    text = BASE.replace("operation: sysout", f"operation: '{operation}'")
    for strict in (False, True):
        found = _diagnostics(text, strict)
        assert [(d.code, d.severity, d.pointer) for d in found] == [("XF148", "warning", "/functions/0/operation")]
        assert "register a callable under the function name 'log'" in found[0].message


def test_xf149_a_literal_that_sonataflow_would_evaluate_is_flagged_in_both_modes() -> None:
    text = BASE.replace("arguments: {message: hi}",
                        "arguments: {message: .name, id: $WORKFLOW.instanceId, n: .5, text: hello there, "
                        "word: ., sum: '.a +* 1'}")
    for strict in (False, True):
        found = _diagnostics(text, strict)
        assert [(d.code, d.severity, d.pointer.rsplit("/", 1)[1]) for d in found] == [
            ("XF149", "warning", "message"), ("XF149", "warning", "id")]
        assert "write '${ .name }' to evaluate it" in found[0].message
    # Marked, it is an expression and nothing is said; in a JSONPath workflow bare $… is evaluated.
    assert _diagnostics(BASE.replace("arguments: {message: hi}", "arguments: {message: '${ .name }'}"), False) == []
