"""What the loader reports: one :class:`Diagnostic` per problem, each with a code from :data:`CODES`.

The text form is ``file:line:col /json/pointer: message`` so editors and CI logs can jump to it;
``to_dict`` gives the same facts for ``xflow validate --format json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Code:
    """A diagnostic code: stable id, short slug, default severity and a one-line meaning."""

    id: str
    slug: str
    severity: Severity
    summary: str


_TABLE: tuple[Code, ...] = (
    # Reading the document (XF0xx).
    Code("XF001", "yaml-syntax", "error", "the YAML parser rejected the text"),
    Code("XF002", "json-syntax", "error", "the JSON parser rejected the text"),
    Code("XF003", "duplicate-key", "error", "a mapping has the same key twice"),
    Code("XF004", "tab-indentation", "error", "a tab character is used where YAML needs spaces"),
    Code("XF005", "empty-document", "error", "the document is empty"),
    Code("XF006", "not-text", "error", "the file is not UTF-8 text"),
    Code("XF007", "unreadable-file", "error", "the file cannot be read"),
    Code("XF008", "root-not-mapping", "error", "the document root is not a mapping"),
    Code("XF009", "not-json-value", "error", "a YAML value has no JSON equivalent (binary, set, NaN, non-string key)"),
    Code("XF010", "multiple-documents", "error", "the YAML stream holds more than one document"),
    Code("XF011", "too-deep", "error", "aliases are recursive, or the document expands or nests too deeply"),
    # Referenced files (XF02x).
    Code("XF020", "reference-not-found", "error", "a referenced file does not exist or cannot be read"),
    Code("XF021", "remote-reference-refused", "error", "http(s) references are not fetched"),
    Code("XF022", "reference-bad-shape", "error", "a referenced file does not hold what its field needs"),
    # Schema (XF05x).
    Code("XF050", "schema-violation", "error", "the document does not match the workflow schema"),
    Code("XF051", "unknown-property", "error", "a property the schema does not allow"),
    Code("XF052", "missing-property", "error", "a required property is missing"),
    Code("XF053", "wrong-type", "error", "a value has the wrong JSON type"),
    Code("XF054", "not-allowed-value", "error", "a value is not one of the allowed values"),
    Code("XF055", "unknown-state-type", "error", "a state's type is not a known state type"),
    Code("XF060", "plan-error", "error", "the plan compiler rejected the document"),
    # Lint: names and references (XF1xx).
    Code("XF101", "unknown-transition-target", "error", "a transition names a state that does not exist"),
    Code("XF102", "duplicate-state-name", "error", "two states have the same name"),
    Code("XF103", "unknown-start-state", "error", "start names a state that does not exist"),
    Code("XF104", "unknown-function", "error", "a functionRef names no defined function"),
    Code("XF105", "unknown-event", "error", "an event reference names no defined event"),
    Code("XF106", "wrong-event-kind", "error", "a produced event is consumed, or a consumed event produced"),
    Code("XF107", "unknown-retry", "error", "a retryRef names no defined retry strategy"),
    Code("XF108", "unknown-error", "error", "an error reference names no defined error"),
    Code("XF109", "unknown-compensation-state", "error", "compensatedBy names a state that does not exist"),
    Code("XF110", "compensation-state-not-marked", "error", "a compensating state lacks usedForCompensation: true"),
    Code("XF111", "compensation-state-in-main-flow", "error", "the main flow transitions into a compensation state"),
    Code("XF112", "compensation-leaves-compensation", "error", "a compensation state transitions to a main-flow state"),
    Code("XF113", "nested-compensation", "error", "a compensation state has its own compensatedBy"),
    Code("XF114", "unknown-run-before-state", "error", "workflowExecTimeout.runBefore names no state"),
    Code("XF115", "duplicate-definition-name", "error", "two functions/events/errors/retries/auths/tools share a name"),
    Code("XF116", "switch-mixed-conditions", "error", "a switch has both dataConditions and eventConditions"),
    Code("XF117", "foreach-batch-size", "error", "foreach batchSize is below 1"),
    Code("XF118", "self-transition", "error", "a state transitions to itself where that can only loop for ever"),
    Code("XF119", "unreachable-state", "warning", "no path from start reaches the state"),
    Code("XF120", "suspicious-state-name", "warning", "a state name has surrounding whitespace or control characters"),
    Code("XF121", "invalid-expression", "error", "a jq expression does not compile"),
    Code("XF122", "not-a-path-expression", "error", "toStateData/outputCollection is not a path expression"),
    Code("XF123", "memory-settings", "error", "chat memory settings are inconsistent"),
    Code("XF124", "memory-type-mismatch", "warning", "only the other memory type's sizing field is given"),
    Code("XF125", "unknown-expression-function", "error", "${ fn:name } names no expression function"),
    Code("XF126", "undeclared-secret", "warning", "$SECRETS.NAME is used but NAME is not in secrets"),
    Code("XF127", "invalid-duration", "error", "a duration is not ISO 8601 (e.g. PT30D instead of P30D)"),
    Code("XF128", "parallel-num-completed", "error", "atLeast parallel numCompleted is missing or out of range"),
    Code("XF129", "literal-with-expression", "warning", "text with ${ } in a field where only a whole ${ } is evaluated"),
    Code("XF130", "misspelled-top-level-key", "warning", "an unknown top-level key looks like a known one"),
    Code("XF131", "invalid-inline-schema", "error", "an inline JSON Schema does not match the JSON Schema metaschema"),
    Code("XF132", "continue-as-not-terminating", "warning", "end has continueAs and terminate: false"),
    # SonataFlow relaxations (XF14x): warnings by default, errors with --strict (specs/compat-sonataflow.md).
    Code("XF140", "missing-spec-version", "warning", "specVersion is missing; read as 0.8"),
    Code("XF141", "switch-without-default", "warning", "a data switch has no defaultCondition"),
    Code("XF142", "event-ref-without-result", "warning", "an eventRef has no resultEventRef: produce and continue"),
    Code("XF143", "produced-consumed-event", "warning", "an event of kind consumed is produced"),
    Code("XF144", "arguments-expression", "warning", "functionRef.arguments is one expression string"),
    Code("XF145", "string-boolean", "warning", "a boolean is written as the string 'true' or 'false'"),
    Code("XF146", "consumed-event-without-source", "warning", "a consumed event has no source"),
    Code("XF147", "ignored-property", "warning", "a property SonataFlow ignores (functionRef.name)"),
    Code("XF148", "jvm-only-function", "warning", "a function that needs the JVM; provide a Python implementation"),
    Code("XF149", "unmarked-expression", "warning", "a literal argument SonataFlow would evaluate as jq (.x, $WORKFLOW…)"),
    Code("XF199", "internal-error", "error", "xflow-runtime failed while checking; please report it"),
)

#: Every diagnostic code by id. ``specs/definitions.md`` documents each one.
CODES: dict[str, Code] = {code.id: code for code in _TABLE}


@dataclass(frozen=True)
class Diagnostic:
    """One problem in one document, with its position (1-based line and column; 0 = unknown)."""

    file: str
    line: int
    column: int
    pointer: str
    message: str
    severity: Severity = "error"
    code: str = "XF050"

    @property
    def slug(self) -> str:
        return CODES[self.code].slug if self.code in CODES else ""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}" if self.line else self.file
        pointer = f" {self.pointer}" if self.pointer else ""
        tag = f"{self.code} {self.slug}".strip()
        level = "" if self.severity == "error" else f"{self.severity}: "
        return f"{where}{pointer}: {level}{self.message} [{tag}]"

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file, "line": self.line, "column": self.column, "pointer": self.pointer,
            "message": self.message, "severity": self.severity, "code": self.code, "slug": self.slug,
        }


def sort_key(diagnostic: Diagnostic) -> tuple[str, int, int, str, str]:
    return (diagnostic.file, diagnostic.line, diagnostic.column, diagnostic.pointer, diagnostic.message)


def errors_in(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    return [d for d in diagnostics if d.severity == "error"]
