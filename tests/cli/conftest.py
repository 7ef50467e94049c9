"""Workflow files and a ``cli`` runner for the ``xflow`` command tests."""

from __future__ import annotations

import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from xflow_runtime.cli.main import main

GREET = """
id: greet
specVersion: "0.8"
start: Greet
secrets: [token]
states:
  - name: Greet
    type: inject
    data: {greeting: hello}
    stateDataFilter:
      output: "${ {greeting: .greeting, name: .name, token: $SECRETS.token} }"
    end: true
"""

FAILS = """
id: fails
specVersion: "0.8"
start: Explode
states:
  - name: Explode
    type: inject
    data: {}
    stateDataFilter:
      output: '${ error("the order is broken") }'
    end: true
"""

INVALID = """
id: invalid
specVersion: "0.8"
start: Nowhere
states:
  - name: Only
    type: inject
    data: {}
    transition: Missing
"""

TWO_EVENTS = """
id: two-events
specVersion: "0.8"
start: First
events:
  - {name: Step, type: test.step, source: /tests}
  - {name: Done, type: test.done, source: /tests, kind: produced}
states:
  - name: First
    type: event
    onEvents:
      - eventRefs: [Step]
        eventDataFilter: {toStateData: "${ .first }"}
    timeouts: {eventTimeout: PT30S}
    transition: Second
  - name: Second
    type: event
    onEvents:
      - eventRefs: [Step]
        eventDataFilter: {toStateData: "${ .second }"}
    timeouts: {eventTimeout: PT30S}
    end:
      produceEvents:
        - eventRef: Done
          data: "${ {first: .first.n, second: .second.n} }"
"""


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh working directory (so the default store ``./.xflow/`` is the test's own)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("XFLOW_DATABASE_URL", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / ".cache"))  # xflow run's definition cache
    for name, text in {"greet.yaml": GREET, "fails.yaml": FAILS, "invalid.yaml": INVALID,
                       "two-events.yaml": TWO_EVENTS}.items():
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    def run(*args: str, stdin: str | None = None) -> Result:
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run
