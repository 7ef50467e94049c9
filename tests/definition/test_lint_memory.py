"""Lint rules on chat memory settings (XF123 errors, XF124 warnings)."""

from __future__ import annotations

from typing import Any

from xflow_runtime.definition import check_workflow

from tests.definition.helpers import BASE
from tests.definition.test_lint_refs import AGENT

AGENT_TEXT = BASE.replace("      end: true\n", "      transition: Agent\n") + AGENT.replace("{tool_ref}", "greet")


def _with_memory(memory: str) -> str:
    return AGENT_TEXT.replace("    output: {type: object}\n", f"    output: {{type: object}}\n    memory: {memory}\n")


class _SchemaThatAcceptsAll:
    """Stands in for a lenient schema so the lint rule itself is observed (one diagnostic per pointer)."""

    def iter_errors(self, document: Any) -> list[Any]:
        return []


def _lint_only(text: str) -> list[str]:
    return [str(d) for d in check_workflow(text, source_name="wf.yaml", validator=_SchemaThatAcceptsAll()).diagnostics]


def test_xf123_token_window_needs_max_tokens() -> None:
    assert _lint_only(_with_memory("{memoryId: s1, memoryType: token_window}")) == [
        "wf.yaml:60:13 /states/3/memory: memoryType token_window needs maxTokens [XF123 memory-settings]"]
    assert _lint_only(_with_memory("{memoryId: s1, memoryType: token_window, maxTokens: 1000}")) == []


def test_xf123_message_window_needs_max_messages_unless_memory_is_off() -> None:
    assert [line.split(" [")[1] for line in _lint_only(_with_memory("{memoryId: s1}"))] == ["XF123 memory-settings]"]
    assert _lint_only(_with_memory("{memoryId: s1, maxMessages: 10}")) == []
    assert _lint_only(_with_memory("{memoryId: s1, enabled: false}")) == []
    assert _lint_only(_with_memory("{memoryId: s1, scope: none}")) == []


def test_xf123_sizes_are_positive_integers() -> None:
    found = _lint_only(_with_memory("{memoryId: s1, maxMessages: 0}"))
    assert found == ["wf.yaml:60:41 /states/3/memory/maxMessages: maxMessages must be a positive integer, found 0 "
                     "[XF123 memory-settings]"]
    assert len(_lint_only(_with_memory("{memoryId: s1, maxMessages: true}"))) == 1
    assert len(_lint_only(_with_memory("{memoryId: s1, maxMessages: 2.5}"))) == 1


def test_xf124_sizing_field_of_the_other_type_alone_is_a_warning() -> None:
    found = _lint_only(_with_memory("{memoryId: s1, memoryType: token_window, maxTokens: 500, maxMessages: 5}"))
    assert found == []  # both given: both limits apply (specs/memory.md §1.3), nothing to warn about
    found = _lint_only(_with_memory("{memoryId: s1, maxTokens: 500}"))
    assert found == [
        "wf.yaml:60:13 /states/3/memory: memoryType message_window needs maxMessages [XF123 memory-settings]",
        "wf.yaml:60:28 /states/3/memory/maxTokens: warning: maxTokens is given without maxMessages while memoryType "
        "is message_window; did you mean memoryType token_window? [XF124 memory-type-mismatch]",
    ]


def test_with_the_real_schema_each_memory_problem_is_reported_once() -> None:
    found = check_workflow(_with_memory("{memoryId: s1, memoryType: token_window}"), source_name="wf.yaml")
    assert [(d.pointer, d.code) for d in found.diagnostics] == [("/states/3/memory", "XF052")]


def test_xf131_inline_json_schemas_must_be_valid() -> None:
    bad_output = AGENT_TEXT.replace("    output: {type: object}\n", "    output: {type: string, pattern: '['}\n")
    assert [str(d) for d in check_workflow(bad_output, source_name="wf.yaml").diagnostics] == [
        "wf.yaml:59:37 /states/3/output/pattern: not a valid JSON Schema: '[' is not a 'regex' "
        "[XF131 invalid-inline-schema]"]
    bad_tool = AGENT_TEXT.replace("        description: look things up\n", "        description: look things up\n"
                                  "        parameters: {schema: {type: object, propertyNames: {pattern: '(('}}}\n")
    assert [d.code for d in check_workflow(bad_tool).diagnostics] == ["XF131"]
    assert check_workflow(AGENT_TEXT).diagnostics == []
