"""Schema errors become 'found …, expected …' messages at the right place (real dialect schema)."""

from __future__ import annotations

import pytest

from tests.definition.helpers import BASE, lines

CASES = [
    ("unknown state type", BASE.replace("    type: inject\n", "    type: injekt\n"),
     "wf.yaml:47:11 /states/2/type: 'injekt' is not one of sleep, event, operation, parallel, switch, inject, "
     "foreach, callback, aiagent, aiagentproxy, userproxyagent, usertask (did you mean 'inject'?) "
     "[XF055 unknown-state-type]"),
    ("missing exit uses the schema's rule", BASE.replace("    transition: Decide\n", ""),
     "wf.yaml:25:5 /states/0: missing required property 'transition': A `transition` is required unless `end` is "
     "set (`end: false` does not end the workflow) [XF052 missing-property]"),
    ("end and transition", BASE.replace("    transition: Decide\n", "    transition: Decide\n    end: true\n"),
     "wf.yaml:39:10 /states/0/end: true is not allowed here: `transition` and `end` cannot both be set (only "
     "`end: false` may accompany a transition) [XF054 not-allowed-value]"),
    ("two kinds of action", BASE.replace("        retryRef: Twice\n", "        subFlowRef: other\n        retryRef: Twice\n"),
     "wf.yaml:32:9 /states/0/actions/0/subFlowRef: 'subFlowRef' is not allowed here: An action has only one of "
     "`functionRef`, `eventRef`, `subFlowRef` [XF050 schema-violation]"),
    ("unknown property with suggestion", BASE.replace("          arguments:", "          argumentz:"),
     "wf.yaml:30:11 /states/0/actions/0/functionRef/argumentz: unknown property 'argumentz' (did you mean "
     "'arguments'?) [XF051 unknown-property]"),
    ("one of several types", BASE.replace("transition: Decide", "transition: 5"),
     "wf.yaml:38:17 /states/0/transition: found integer 5, expected string or object [XF053 wrong-type]"),
    ("null state", BASE.replace("  - name: Done\n    type: inject\n", "  - null\n  - name: Done\n    type: inject\n"),
     "wf.yaml:46:5 /states/2: found null, expected object [XF053 wrong-type]"),
    ("string or array section", BASE.replace("functions:\n  - name: greet", "functions: 42\nx:\n  - name: greet"),
     "wf.yaml:4:12 /functions: found integer 42, expected string or array [XF053 wrong-type]"),
]


@pytest.mark.parametrize("text,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_schema_message(text: str, expected: str) -> None:
    assert lines(text)[0] == expected
