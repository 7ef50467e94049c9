"""Lint rules on compensation (XF109–XF113)."""

from __future__ import annotations

from tests.definition.helpers import BASE, codes, lines

UNDO = """  - name: Undo
    type: inject
    data: {undone: true}
    usedForCompensation: true
"""
COMPENSATED = BASE.replace("    transition: Decide\n", "    transition: Decide\n    compensatedBy: Undo\n") + UNDO


def test_valid_compensation_is_clean() -> None:
    assert codes(COMPENSATED) == []


def test_xf109_unknown_compensation_state() -> None:
    assert lines(COMPENSATED.replace("compensatedBy: Undo", "compensatedBy: Undoo")) == [
        "wf.yaml:39:20 /states/0/compensatedBy: compensatedBy state 'Undoo' does not exist (did you mean 'Undo'?) "
        "[XF109 unknown-compensation-state]"]


def test_xf110_compensating_state_must_be_marked() -> None:
    assert lines(COMPENSATED.replace("    usedForCompensation: true\n", "    end: true\n")) == [
        "wf.yaml:39:20 /states/0/compensatedBy: state 'Undo' compensates another state, so it must set "
        "usedForCompensation: true [XF110 compensation-state-not-marked]"]


def test_xf111_main_flow_cannot_enter_a_compensation_state() -> None:
    text = COMPENSATED.replace("    defaultCondition:\n      end: true\n", "    defaultCondition:\n      transition: Undo\n")
    assert lines(text) == [
        "wf.yaml:46:19 /states/1/defaultCondition/transition: 'Undo' is a compensation state; the main flow "
        "cannot transition into it (it runs only through compensatedBy) [XF111 compensation-state-in-main-flow]"]


def test_xf112_compensation_state_only_moves_to_compensation_states() -> None:
    text = COMPENSATED + "    transition: Done\n"
    assert lines(text) == [
        "wf.yaml:59:17 /states/3/transition: compensation state transitions to 'Done', which is not a compensation "
        "state (usedForCompensation: true) [XF112 compensation-leaves-compensation]"]
    chained = COMPENSATED + "    transition: Undo2\n" + UNDO.replace("Undo", "Undo2")
    assert codes(chained) == []


def test_xf113_compensation_does_not_nest() -> None:
    text = COMPENSATED + "    compensatedBy: Undo2\n" + UNDO.replace("Undo", "Undo2")
    assert lines(text) == ["wf.yaml:59:20 /states/3/compensatedBy: a compensation state cannot itself be "
                           "compensated (compensatedBy) [XF113 nested-compensation]"]
