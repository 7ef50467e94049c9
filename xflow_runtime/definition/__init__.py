"""Reading workflow documents: YAML/JSON with positions, referenced files, schema, lint, diagnostics.

``load_workflow(path_or_text)`` returns a :class:`LoadedWorkflow` or raises
:class:`~xflow_runtime.errors.DefinitionError` listing every problem as a :class:`Diagnostic`.
"""

from xflow_runtime.definition.diagnostics import CODES, Diagnostic
from xflow_runtime.definition.loader import (
    CheckResult, LoadedWorkflow, build_plan, check_workflow, load_workflow, validate_documents, validate_text,
)

__all__ = ["CODES", "CheckResult", "Diagnostic", "LoadedWorkflow", "build_plan", "check_workflow",
           "load_workflow", "validate_documents", "validate_text"]
