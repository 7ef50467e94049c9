"""Run every lint rule over a document. Each rule reports through a :class:`Reporter`."""

from __future__ import annotations

from typing import Any, Callable

from xflow_runtime.definition.compat import check_jvm_functions
from xflow_runtime.definition.lint_expressions import check_expressions
from xflow_runtime.definition.lint_hints import check_top_level_keys
from xflow_runtime.definition.lint_flow import check_compensation, check_reachability
from xflow_runtime.definition.lint_memory import check_memory
from xflow_runtime.definition.lint_refs import check_references
from xflow_runtime.definition.lint_schemas import check_inline_schemas
from xflow_runtime.definition.lint_states import check_names, check_state_rules, check_targets
from xflow_runtime.definition.lint_values import check_durations, check_parallel
from xflow_runtime.definition.walk import Reporter

RULES: tuple[Callable[[dict[str, Any], Reporter], None], ...] = (
    check_names, check_targets, check_state_rules, check_references, check_compensation,
    check_reachability, check_expressions, check_memory, check_durations, check_parallel,
    check_top_level_keys, check_inline_schemas, check_jvm_functions,
)


def run_lint(document: dict[str, Any], report: Reporter,
             rules: tuple[Callable[[dict[str, Any], Reporter], None], ...] = RULES) -> None:
    for rule in rules:
        try:
            rule(document, report)
        except Exception as exc:  # a bug in a rule must not hide the other diagnostics
            report("", f"internal error in lint rule {rule.__name__}: {type(exc).__name__}: {exc}", "XF199")
