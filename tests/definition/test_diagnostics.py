"""The Diagnostic type, the code table, and how the loader reports its own failures."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from xflow_runtime.definition import CODES, Diagnostic, build_plan
from xflow_runtime.definition.lint import run_lint

TESTS = Path(__file__).parent
SPEC = Path(__file__).resolve().parents[2] / "specs" / "definitions.md"


def test_text_form_and_dict_form() -> None:
    diagnostic = Diagnostic("support.yaml", 14, 5, "/states/2/memory/memoryType",
                            "'tokens_window' is not one of message_window, token_window", "error", "XF054")
    assert str(diagnostic) == ("support.yaml:14:5 /states/2/memory/memoryType: 'tokens_window' is not one of "
                               "message_window, token_window [XF054 not-allowed-value]")
    assert diagnostic.to_dict() == {
        "file": "support.yaml", "line": 14, "column": 5, "pointer": "/states/2/memory/memoryType",
        "message": "'tokens_window' is not one of message_window, token_window", "severity": "error",
        "code": "XF054", "slug": "not-allowed-value"}
    warning = Diagnostic("a.yaml", 0, 0, "", "whole file", "warning", "XF119")
    assert str(warning) == "a.yaml: warning: whole file [XF119 unreachable-state]"


def test_every_code_is_documented_and_exercised_by_a_test() -> None:
    spec = SPEC.read_text()
    test_text = "\n".join(p.read_text(errors="replace") for p in TESTS.rglob("*") if p.is_file()
                          and p.suffix in (".py", ".yaml", ".json", "") and p.name != "test_diagnostics.py")
    for code in CODES.values():
        assert f"`{code.id}`" in spec, f"{code.id} is not documented in specs/definitions.md"
        assert code.id in test_text or code.id in _EXERCISED_HERE, f"no test exercises {code.id}"
    assert len(set(re.findall(r"`(XF\d{3})`", spec)) - set(CODES)) == 0, "spec documents unknown codes"


_EXERCISED_HERE = {"XF060", "XF199"}


def test_xf060_plan_compiler_complaints_become_diagnostics() -> None:
    plan, problems = build_plan({"id": "x", "specVersion": "0.8", "states": []}, Path("."), "wf.yaml")
    assert plan is None
    assert [(d.code, d.pointer, d.file) for d in problems] == [("XF060", "/states", "wf.yaml")]


def test_xf199_a_crashing_lint_rule_is_reported_not_raised() -> None:
    found: list[tuple[Any, ...]] = []

    def broken_rule(document: dict[str, Any], report: Any) -> None:
        raise KeyError("oops")

    def recorder(pointer: str, message: str, code: str, **_: Any) -> None:
        found.append((pointer, message, code))

    run_lint({"states": []}, recorder, rules=(broken_rule,))
    assert found == [("", "internal error in lint rule broken_rule: KeyError: 'oops'", "XF199")]


def test_xf060_from_validate_is_positioned_in_the_document() -> None:
    from xflow_runtime.definition import validate_text

    from tests.definition.test_lint_memory import AGENT_TEXT

    # The plan compiler's own rule (an explicit finish: false cannot have a transition) is not a
    # lint rule here; an outcome with a transition and no finish leaves the state.
    assert validate_text(AGENT_TEXT, "wf.yaml") == []
    waiting = AGENT_TEXT.replace("        transition: Done\n    end: true\n",
                                 "        finish: false\n        transition: Done\n    end: true\n")
    assert [str(d) for d in validate_text(waiting, "wf.yaml")] == [
        "wf.yaml:66:9 /states/3/agentOutcomes/0: an outcome with finish: false keeps the conversation in this "
        "state, so its transition would never be taken; set finish: true [XF060 plan-error]"]
