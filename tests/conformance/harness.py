"""The conformance harness: load YAML cases, run each through the public in-process API, compare.

A case is a Given / When / Then document (format in specs/conformance.md):

- ``given``: the workflow ``definition`` and ``input``, stub ``functions``, extra ``workflows``
  (subflows, continueAs targets), ``secrets`` and ``files`` (written next to the definition);
- ``when``: the CloudEvents delivered to the instance (``events``);
- ``then``: the expected ``output`` or ``error``, the ``calls`` made (function name and
  arguments, in order), ``produced_events``, and virtual-clock timings (``elapsed``,
  ``call_times``); or ``invalid`` when the definition must be rejected at load time.

The harness only uses public entry points: ``compile_plan`` and ``load_workflow`` to load,
``run_workflow`` to run (virtual clock), ``WorkflowError`` for stub failures, and the observer
hook to read the clock at the start and end of the instance.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import jq
import yaml

from xflow_runtime.errors import DefinitionError, WorkflowError

CASES_DIR = Path(__file__).parent / "cases"

#: How much later than expected a virtual-clock reading may be (real CPU time leaks into it).
CLOCK_TOLERANCE = 1.0

_TOP_KEYS = {"description", "spec", "given", "when", "then", "xfail"}
_GIVEN_KEYS = {"definition", "input", "functions", "workflows", "secrets", "files"}
_WHEN_KEYS = {"events"}
_THEN_KEYS = {"output", "error", "invalid", "calls", "calls_any_order", "produced_events", "elapsed",
              "call_times"}
_STUB_KEYS = {"returns", "raises", "compute", "sequence", "delay", "delay_by"}
_ERROR_KEYS = {"name", "code", "status", "message", "message_contains"}
_DURATION = re.compile(r"^P(?:(?P<d>\d+(?:\.\d+)?)D)?(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?"
                       r"(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$")


class CaseFormatError(Exception):
    """A case file breaks the documented format (a typo in a key, a bad stub, …)."""


@dataclass(frozen=True)
class Case:
    id: str  # the path below cases/, e.g. "foreach/results_in_input_order.yaml"
    description: str
    given: dict[str, Any]
    when: dict[str, Any]
    then: dict[str, Any]
    xfail: str | None = None


@dataclass
class Outcome:
    """What one run observably did."""

    status: str = ""
    output: Any = None
    error: dict[str, Any] | None = None
    invalid: str | None = None  # the load-time error message, when the definition was rejected
    calls: list[list[Any]] = field(default_factory=list)
    call_times: list[float] = field(default_factory=list)
    produced_events: list[dict[str, Any]] = field(default_factory=list)
    elapsed: float | None = None


# --- loading ---------------------------------------------------------------------------------------

def load_cases(root: Path = CASES_DIR) -> list[Case]:
    return [load_case(path, root) for path in sorted(root.rglob("*.yaml"))]


def load_case(path: Path, root: Path = CASES_DIR) -> Case:
    case_id = path.relative_to(root).as_posix()
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise CaseFormatError(f"{case_id}: a case is a mapping")
    _only(raw, _TOP_KEYS, case_id)
    given, when, then = raw.get("given") or {}, raw.get("when") or {}, raw.get("then") or {}
    _only(given, _GIVEN_KEYS, f"{case_id} given")
    _only(when, _WHEN_KEYS, f"{case_id} when")
    _only(then, _THEN_KEYS, f"{case_id} then")
    if "definition" not in given:
        raise CaseFormatError(f"{case_id}: given.definition is required")
    if not {"output", "error", "invalid", "calls", "produced_events"} & then.keys():
        raise CaseFormatError(f"{case_id}: then must expect something")
    if "output" in then and ("error" in then or "invalid" in then):
        raise CaseFormatError(f"{case_id}: expect an output or an error, not both")
    for name, stub in (given.get("functions") or {}).items():
        _check_stub(stub, f"{case_id} given.functions.{name}")
    if isinstance(then.get("error"), dict):
        _only(then["error"], _ERROR_KEYS, f"{case_id} then.error")
    return Case(case_id, str(raw.get("description", "")).strip(), given, when, then, raw.get("xfail"))


def _only(mapping: Any, allowed: set[str], where: str) -> None:
    if not isinstance(mapping, dict):
        raise CaseFormatError(f"{where}: expected a mapping")
    unknown = set(mapping) - allowed
    if unknown:
        raise CaseFormatError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(allowed)}")


def _check_stub(stub: Any, where: str) -> None:
    _only(stub, _STUB_KEYS, where)
    outcomes = [key for key in ("returns", "raises", "compute", "sequence") if key in stub]
    if len(outcomes) != 1:
        raise CaseFormatError(f"{where}: give exactly one of returns / raises / compute / sequence")
    for step in stub.get("sequence") or ():
        _check_stub(step, f"{where} sequence item")


def parse_duration(text: Any) -> float:
    """Seconds in an ISO 8601 duration (or a bare number of seconds)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    match = _DURATION.match(str(text).strip().upper())
    if not match:
        raise CaseFormatError(f"not an ISO 8601 duration: {text!r}")
    parts = {key: float(value) if value else 0.0 for key, value in match.groupdict().items()}
    return parts["d"] * 86400 + parts["h"] * 3600 + parts["m"] * 60 + parts["s"]


# --- stubs -----------------------------------------------------------------------------------------

class CallLog:
    """Every stub call of one run, in the order the calls started."""

    def __init__(self) -> None:
        self.calls: list[list[Any]] = []
        self.times: list[float] = []


def build_stub(name: str, spec: dict[str, Any], log: CallLog) -> Callable[[Any], Any]:
    """An async callable that records its call, then returns, computes or raises as told.

    ``delay`` / ``delay_by`` make the call take that long in *real* time: the in-process engine
    marks a function call as in flight, and the virtual clock only skips idle time.
    """
    steps = list(spec["sequence"]) if "sequence" in spec else [spec]
    counter = {"n": 0}

    async def stub(arguments: Any = None) -> Any:
        arguments = _plain(arguments)
        log.calls.append([name, arguments])
        log.times.append(asyncio.get_running_loop().time())
        step = steps[min(counter["n"], len(steps) - 1)]
        counter["n"] += 1
        delay = _delay_of(spec, step, arguments)
        if delay:
            await asyncio.sleep(delay)
        if "raises" in step:
            raise _failure(step["raises"] or {})
        if "compute" in step:
            return _jq(step["compute"], arguments)
        return json.loads(json.dumps(step.get("returns")))  # a fresh copy per call

    stub.__name__ = f"stub_{name}"
    return stub


def _failure(spec: dict[str, Any]) -> Exception:
    """``{exception: ValueError, message}`` → that built-in exception (a plain Python failure);
    otherwise a :class:`WorkflowError` with the given name, code and HTTP status."""
    message = str(spec.get("message", "stub failure"))
    if "exception" in spec:
        kind = getattr(builtins, str(spec["exception"]), None)
        if not (isinstance(kind, type) and issubclass(kind, Exception)):
            raise CaseFormatError(f"raises.exception {spec['exception']!r} is not a built-in exception class")
        return kind(message)
    status = spec.get("status")
    return WorkflowError(message, name=spec.get("name"), code=spec.get("code"),
                         status=int(status) if status is not None else None)


def _delay_of(spec: dict[str, Any], step: dict[str, Any], arguments: Any) -> float:
    for source in (step, spec):
        if "delay_by" in source:
            return float(_jq(source["delay_by"], arguments) or 0)
        if "delay" in source:
            return parse_duration(source["delay"])
    return 0.0


def _jq(program: str, data: Any) -> Any:
    outputs = jq.compile(program).input_value(data).all()
    return outputs[0] if len(outputs) == 1 else outputs


def _plain(value: Any) -> Any:
    """Arguments as plain JSON (no-arguments calls are recorded as None)."""
    return None if value is None else json.loads(json.dumps(value))


# --- running ---------------------------------------------------------------------------------------

def run_case(case: Case) -> Outcome:
    """Load and run ``case`` in its own temporary folder; never raises for workflow failures."""
    with tempfile.TemporaryDirectory(prefix="xflow-conformance-") as folder:
        for relative, content in (case.given.get("files") or {}).items():
            target = Path(folder, relative)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
        if "invalid" in case.then:
            return _load_only(case, folder)
        return _run(case, folder)


def _load_only(case: Case, folder: str) -> Outcome:
    from xflow_runtime.definition import load_workflow

    try:
        # "Invalid" means by the letter of SW 0.8: SonataFlow's relaxations are errors only when strict.
        load_workflow(yaml.safe_dump(case.given["definition"], sort_keys=False), base_dir=folder, strict=True)
    except DefinitionError as exc:
        return Outcome(status="invalid", invalid=str(exc))
    return Outcome(status="loaded")


def _run(case: Case, folder: str) -> Outcome:
    from xflow_runtime.engine.inprocess import run_workflow
    from xflow_runtime.plan import compile_plan

    try:
        plan = compile_plan(case.given["definition"], base_dir=folder, source_name=case.id)
        workflows = [compile_plan(document, base_dir=folder, source_name=f"{case.id} workflow {i}")
                     for i, document in enumerate(case.given.get("workflows") or ())]
    except DefinitionError as exc:
        return Outcome(status="invalid", invalid=str(exc))
    log = CallLog()
    functions = {name: build_stub(name, spec, log) for name, spec in (case.given.get("functions") or {}).items()}
    clock: dict[str, Any] = {}

    def observe(event: dict[str, Any]) -> None:
        now = asyncio.get_running_loop().time()
        if event["event"] == "workflow_started" and "start" not in clock:
            clock["start"], clock["instance"] = now, event.get("instance_id")
        elif (event["event"] in ("workflow_completed", "workflow_failed")
              and event.get("instance_id") == clock.get("instance") and "end" not in clock):
            clock["end"] = now

    events = [_cloudevent(event, i) for i, event in enumerate((case.when or {}).get("events") or ())]
    result = asyncio.run(run_workflow(plan, case.given.get("input"), functions=functions, events=events,
                                      secrets=case.given.get("secrets"), workflows=workflows, observer=observe))
    start = clock.get("start")
    return Outcome(
        status=result.status, output=result.output, error=result.error, calls=log.calls,
        call_times=[t - start for t in log.times] if start is not None else [],
        produced_events=list(result.produced_events),
        elapsed=clock["end"] - start if start is not None and "end" in clock else None,
    )


def _cloudevent(event: dict[str, Any], index: int) -> dict[str, Any]:
    """Fill the required CloudEvents attributes a case leaves out."""
    filled = {"specversion": "1.0", "id": f"conformance-event-{index}"}
    filled.update(event)
    return filled


# --- comparing -------------------------------------------------------------------------------------

def mismatches(case: Case, outcome: Outcome) -> list[str]:
    """Every way ``outcome`` differs from what ``case`` expects (empty when it conforms)."""
    then, problems = case.then, []
    if "invalid" in then:
        if outcome.invalid is None:
            problems.append(f"expected the definition to be rejected ({then['invalid']!r}); it loaded")
        elif str(then["invalid"]).lower() not in outcome.invalid.lower():
            problems.append(f"rejected, but the message does not mention {then['invalid']!r}: {outcome.invalid}")
        return problems
    if outcome.invalid is not None:
        return [f"the definition was rejected: {outcome.invalid}"]
    if "output" in then:
        if outcome.status != "completed":
            problems.append(f"expected completion with output {_show(then['output'])}; failed with {outcome.error}")
        elif outcome.output != then["output"]:
            problems.append(f"output {_show(outcome.output)} != expected {_show(then['output'])}")
    if "error" in then:
        problems += _error_mismatches(then["error"] or {}, outcome)
    if "calls" in then:
        problems += _call_mismatches(then["calls"] or [], outcome.calls, bool(then.get("calls_any_order")))
    if "produced_events" in then:
        problems += _event_mismatches(then["produced_events"] or [], outcome.produced_events)
    if "elapsed" in then:
        problems += _time_mismatch("elapsed", parse_duration(then["elapsed"]), outcome.elapsed)
    if "call_times" in then:
        expected_times = [parse_duration(t) for t in then["call_times"]]
        if len(expected_times) != len(outcome.call_times):
            problems.append(f"{len(outcome.call_times)} calls timed, expected {len(expected_times)}")
        for i, (expected, actual) in enumerate(zip(expected_times, outcome.call_times)):
            problems += _time_mismatch(f"call {i + 1} time", expected, actual)
    return problems


def _error_mismatches(expected: dict[str, Any], outcome: Outcome) -> list[str]:
    if outcome.status != "failed":
        return [f"expected failure {expected or '(any error)'}; completed with output {_show(outcome.output)}"]
    actual = outcome.error or {}
    problems = []
    for key in ("name", "code", "status"):
        if key in expected and str(actual.get(key)) != str(expected[key]):
            problems.append(f"error {key} {actual.get(key)!r} != expected {expected[key]!r} (error: {actual})")
    if "message" in expected and actual.get("message") != expected["message"]:
        problems.append(f"error message {actual.get('message')!r} != expected {expected['message']!r}")
    if "message_contains" in expected and str(expected["message_contains"]) not in str(actual.get("message")):
        problems.append(f"error message {actual.get('message')!r} does not contain {expected['message_contains']!r}")
    return problems


def _call_mismatches(expected: list[list[Any]], actual: list[list[Any]], any_order: bool) -> list[str]:
    # A [name] entry checks the name only (what an argument-less call receives is the runtime's
    # choice); it makes every call of that function name-only, in both lists.
    name_only = {entry[0] for entry in expected if len(entry) == 1}

    def normal(call: list[Any]) -> list[Any]:
        return [call[0]] if call[0] in name_only else [call[0], call[1] if len(call) > 1 else None]

    want, got = [normal(e) for e in expected], [normal(a) for a in actual]
    if any_order:
        want, got = sorted(want, key=_call_key), sorted(got, key=_call_key)
    if want != got:
        order = " (any order)" if any_order else ""
        return [f"calls{order} {_show(got)} != expected {_show(want)}"]
    return []


def _call_key(call: list[Any]) -> str:
    return json.dumps(call, sort_keys=True, default=str)


def _event_mismatches(expected: list[dict[str, Any]], actual: list[dict[str, Any]]) -> list[str]:
    if len(expected) != len(actual):
        return [f"{len(actual)} events produced {_show(actual)}, expected {len(expected)} {_show(expected)}"]
    problems = []
    for i, (want, got) in enumerate(zip(expected, actual)):
        for key, value in want.items():  # a subset match: the runtime adds id, time, specversion…
            if key not in got or got[key] != value:
                problems.append(f"produced event {i + 1}: {key} = {_show(got.get(key))}, expected {_show(value)}")
    return problems


def _time_mismatch(what: str, expected: float, actual: float | None) -> list[str]:
    if actual is None:
        return [f"{what}: the instance's clock was not observed"]
    if not expected - 0.001 <= actual <= expected + CLOCK_TOLERANCE:
        return [f"{what} {actual:.3f} s on the virtual clock, expected {expected:g} s"]
    return []


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
