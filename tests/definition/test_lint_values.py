"""Lint rules on durations (XF127) and parallel numCompleted (XF128)."""

from __future__ import annotations

from xflow_runtime.definition import check_workflow

from tests.definition.helpers import BASE, check, codes, lines
from tests.definition.test_lint_memory import _SchemaThatAcceptsAll

SLEEP = "  - name: Nap\n    type: sleep\n    duration: {duration}\n    end: true\n"
REACH_NAP = BASE.replace("      end: true\n", "      transition: Nap\n")


def test_xf127_date_units_after_t_with_a_hint() -> None:
    assert lines(REACH_NAP + SLEEP.format(duration="PT2W")) == [
        "wf.yaml:56:15 /states/3/duration: 'PT2W' is not an ISO 8601 duration (days and weeks go before 'T': "
        "write 'P2W') [XF127 invalid-duration]"]
    assert codes(REACH_NAP + SLEEP.format(duration="P2W")) == []


def test_xf127_every_bad_duration_at_once() -> None:
    text = (REACH_NAP + SLEEP.format(duration="PT1S")).replace(
        "    maxAttempts: 2\n", "    maxAttempts: 2\n    delay: soon\n    jitter: 0.5\n").replace(
        "id: base\n", "id: base\ntimeouts:\n  workflowExecTimeout: {duration: PT30D}\n  stateExecTimeout: "
                      "{total: 1 minute}\n")
    found = [(d.pointer, d.code) for d in check(text)]
    assert found == [("/timeouts/workflowExecTimeout/duration", "XF127"),
                     ("/timeouts/stateExecTimeout/total", "XF127"), ("/retries/0/delay", "XF127")]


def test_xf127_action_sleep_and_result_event_timeout() -> None:
    text = BASE.replace("        retryRef: Twice\n", "        retryRef: Twice\n        sleep: {before: PT1S, after: 5 s}\n")
    assert codes(text) == ["XF127"]


PARALLEL = """  - name: Fork
    type: parallel
    completionType: atLeast
{num}    branches:
      - {{name: A, actions: [{{functionRef: greet}}]}}
      - {{name: B, actions: [{{functionRef: greet}}]}}
    end: true
"""
REACH_FORK = BASE.replace("      end: true\n", "      transition: Fork\n")


def test_xf128_num_completed_must_fit_the_branches() -> None:
    assert lines(REACH_FORK + PARALLEL.format(num="    numCompleted: 3\n")) == [
        "wf.yaml:57:19 /states/3/numCompleted: numCompleted 3 must be between 1 and the number of branches (2); "
        "otherwise the state can never complete [XF128 parallel-num-completed]"]
    assert codes(REACH_FORK + PARALLEL.format(num="    numCompleted: '0'\n")) == ["XF128"]
    assert codes(REACH_FORK + PARALLEL.format(num="    numCompleted: 2\n")) == []
    assert codes(REACH_FORK + PARALLEL.format(num="    numCompleted: '1'\n")) == []


def test_xf128_at_least_without_num_completed() -> None:
    text = REACH_FORK + PARALLEL.format(num="")
    assert codes(text) == ["XF052"]  # the schema says it first: one diagnostic per pointer
    lenient = check_workflow(text, validator=_SchemaThatAcceptsAll()).diagnostics
    assert [(d.pointer, d.code) for d in lenient] == [("/states/3", "XF128")]
