"""Without OpenTelemetry in use nothing of it is imported; with the standard OTEL_* variables the
SDK is set up from them (specs/observability.md, "When tracing is on")."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.engine.crash_support import REPO

RUN = """
import asyncio, json, sys
from xflow_runtime import Runtime

async def main():
    async with Runtime() as runtime:
        plan = runtime.load(sys.argv[1])
        handle = await runtime.start(plan, {"order": {"id": "A-1", "total": 50}})
        await handle.result()
    print(json.dumps(sorted(name for name in sys.modules if name.startswith("opentelemetry"))), file=sys.stderr)

asyncio.run(main())
"""


def run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    return subprocess.run([sys.executable, "-c", RUN, str(REPO / "workflows" / "order-approval.yaml")], cwd=REPO,
                          capture_output=True, text=True, timeout=120,
                          env={**clean, "PYTHONPATH": str(REPO), **env})


def test_nothing_of_opentelemetry_is_imported_when_it_is_not_configured() -> None:
    done = run({})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stderr.splitlines()[-1]) == []


def test_the_standard_variables_set_the_sdk_up_and_trace_the_instance() -> None:
    done = run({"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "xflow-test"})
    assert done.returncode == 0, done.stderr
    assert "opentelemetry.sdk.trace" in json.loads(done.stderr.splitlines()[-1])
    assert '"name": "invoke_workflow order-approval"' in done.stdout
    assert '"service.name": "xflow-test"' in done.stdout


def test_otel_sdk_disabled_wins() -> None:
    done = run({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"})
    assert done.returncode == 0, done.stderr
    assert "invoke_workflow" not in done.stdout
    assert json.loads(done.stderr.splitlines()[-1]) == []


def test_an_exporter_that_is_not_installed_is_a_warning_and_the_instance_runs() -> None:
    done = run({"OTEL_TRACES_EXPORTER": "no-such-exporter"})
    assert done.returncode == 0, done.stderr
    assert "cannot set OpenTelemetry up from the OTEL_* variables" in done.stderr
    assert "invoke_workflow" not in done.stdout
