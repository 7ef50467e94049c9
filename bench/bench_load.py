"""BENCH load: load + validate + lint + compile a generated 200-state workflow.

Baseline in the same run: ``yaml.safe_load`` (libyaml) plus validation against the official
Serverless Workflow 0.8 schema (jsonschema, offline registry) of the same document — what a
minimal loader without positions, references, lint or compilation would cost.

    python3 bench/bench_load.py [--states 200] [--repeat 15]

Times are medians and minimums of ``--repeat`` runs; the ratio uses minimums (least disturbed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml  # noqa: E402

from xflow_runtime.definition import load_workflow  # noqa: E402
from xflow_runtime.definition.lint import run_lint  # noqa: E402
from xflow_runtime.definition.reader import parse_source  # noqa: E402
from xflow_runtime.definition.schema_check import schema_findings  # noqa: E402
from xflow_runtime.definition.schema_registry import workflow_validator  # noqa: E402

OFFICIAL_SCHEMAS = Path("/work/shared/reference/sw-0.8-schema")


def generate(states: int) -> dict[str, Any]:
    """A valid workflow cycling through operation, switch, inject, foreach and sleep states."""
    body: list[dict[str, Any]] = []
    for i in range(states):
        name, next_name = f"S{i}", f"S{i + 1}"
        exit_: dict[str, Any] = {"transition": next_name} if i + 1 < states else {"end": True}
        kind = i % 5
        if kind == 0:
            state = {"name": name, "type": "operation", "actions": [{
                "functionRef": {"refName": "work", "arguments": {"n": f"${{ .count + {i} }}", "label": "step"}},
                "actionDataFilter": {"results": ".value", "toStateData": f".results.s{i}"}}],
                "stateDataFilter": {"output": "${ . }"}, **exit_}
        elif kind == 1:
            state = {"name": name, "type": "switch", "dataConditions": [
                {"condition": f"${{ .count > {i} }}", **exit_}], "defaultCondition": exit_}
        elif kind == 2:
            state = {"name": name, "type": "inject", "data": {"step": i, "tags": ["a", "b"]}, **exit_}
        elif kind == 3:
            state = {"name": name, "type": "foreach", "inputCollection": "${ .items }", "iterationParam": "item",
                     "outputCollection": f"${{ .out{i} }}", "actions": [{"functionRef": "inc"}], **exit_}
        else:
            state = {"name": name, "type": "sleep", "duration": "PT1S", **exit_}
        body.append(state)
    return {"id": "bench", "specVersion": "0.8", "version": "1.0", "start": "S0",
            "functions": [{"name": "work", "type": "custom", "operation": "python:bench:work"},
                          {"name": "inc", "type": "expression", "operation": ".count + 1"}],
            "states": body}


def official_validator() -> Any:
    from jsonschema import Draft7Validator
    from referencing import Registry, Resource

    resources = []
    for path in OFFICIAL_SCHEMAS.glob("*.json"):
        contents = json.loads(path.read_text())
        resources.append((contents["$id"], Resource.from_contents(contents)))
    schema = json.loads((OFFICIAL_SCHEMAS / "workflow.json").read_text())
    return Draft7Validator(schema, registry=Registry().with_resources(resources))


def median_ms(run: Callable[[], Any], repeat: int) -> float:
    return statistics.median(timings_ms(run, repeat))


def min_ms(run: Callable[[], Any], repeat: int) -> float:
    """The least-disturbed run: on a shared 2-core machine the median mostly measures neighbours."""
    return min(timings_ms(run, repeat))


def timings_ms(run: Callable[[], Any], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--states", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    document = generate(args.states)
    text = yaml.safe_dump(document, sort_keys=False)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.yaml"
        path.write_text(text)
        start = time.perf_counter()
        loaded = load_workflow(path)  # first run: schemas loaded, every expression compiled
        cold_ms = (time.perf_counter() - start) * 1000
        assert loaded.plan is not None and not loaded.diagnostics, loaded.diagnostics
        ours_all = timings_ms(lambda: load_workflow(path), args.repeat)
        ours, ours_min = statistics.median(ours_all), min(ours_all)
        no_plan = min_ms(lambda: load_workflow(path, compile=False), args.repeat)

    parse = min_ms(lambda: parse_source(text, "bench.yaml"), args.repeat)
    schema = min_ms(lambda: schema_findings(document), args.repeat)  # what the loader runs (jsonschema-rs)
    ours_validator = workflow_validator()  # the Python validator, now used only to explain invalid documents
    python_schema = min_ms(lambda: list(ours_validator.iter_errors(document)), max(3, args.repeat // 3))
    lint = min_ms(lambda: run_lint(document, lambda *a, **k: None), args.repeat)

    official = official_validator()
    assert not list(official.iter_errors(document)), "generated document must satisfy the official schema"
    baseline_all = timings_ms(lambda: list(official.iter_errors(yaml.load(text, Loader=yaml.CSafeLoader))),
                              args.repeat)
    baseline, baseline_min = statistics.median(baseline_all), min(baseline_all)
    baseline_pure = min_ms(lambda: list(official.iter_errors(yaml.safe_load(text))), max(3, args.repeat // 3))

    print(f"BENCH load states={args.states} ms={ours:.1f} min_ms={ours_min:.1f} "
          f"per_state_us={ours_min * 1000 / args.states:.0f} cold_ms={cold_ms:.1f} no_plan_min_ms={no_plan:.1f} "
          f"parse_min_ms={parse:.1f} schema_min_ms={schema:.2f} python_schema_min_ms={python_schema:.1f} lint_min_ms={lint:.1f} baseline_ms={baseline:.1f} "
          f"baseline_min_ms={baseline_min:.1f} baseline_pure_yaml_min_ms={baseline_pure:.1f} "
          f"ratio_vs_baseline={ours_min / baseline_min:.2f}")


if __name__ == "__main__":
    main()
