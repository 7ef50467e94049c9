"""Schema findings for one document: a compiled fast check first, the explaining validator only on failure.

``jsonschema-rs`` decides validity in well under a millisecond, where the pure-Python validator
takes hundreds on a large workflow and costs ~100 ms to import. A document it accepts has no
schema findings; a document it rejects (or cannot take, e.g. a YAML date or a non-string key)
goes through the Python validator, so every message and position stays exactly what
:mod:`~xflow_runtime.definition.schema_errors` produces. The two validators are differentially
tested over every corpus (``tests/definition/test_schema_fast_path.py``).
"""

from __future__ import annotations

from typing import Any

from xflow_runtime.definition.schema_errors import Finding, explain


def schema_findings(document: Any, validator: Any = None) -> list[Finding]:
    """Every schema problem of ``document``; ``validator`` replaces the dialect's own (tests)."""
    if validator is None:
        from xflow_runtime.definition.schema_registry import fast_workflow_validator, workflow_validator

        if fast_accepts(fast_workflow_validator(), document):
            return []
        validator = workflow_validator()
    return explain(validator.iter_errors(document))


def fast_accepts(fast: Any, document: Any) -> bool:
    """True only when the fast validator exists and positively accepts ``document``."""
    if fast is None:
        return False
    try:
        return bool(fast.is_valid(document))
    except Exception:  # noqa: BLE001 - a value it cannot convert is judged by the Python validator
        return False
