"""Shared helpers: a valid base workflow and shortcuts to check text and read diagnostics."""

from __future__ import annotations

import textwrap
from typing import Any

from xflow_runtime.definition import Diagnostic, check_workflow

#: A small valid workflow touching most features; tests edit copies of it.
BASE = textwrap.dedent("""\
    id: base
    specVersion: "0.8"
    start: Greet
    functions:
      - name: greet
        type: custom
        operation: python:tests.fake:greet
      - name: inc
        type: expression
        operation: .count + 1
    events:
      - name: Ping
        type: ping
        source: tests
      - name: Pong
        type: pong
        kind: produced
    errors:
      - name: Boom
        code: "500"
    retries:
      - name: Twice
        maxAttempts: 2
    states:
      - name: Greet
        type: operation
        actions:
          - functionRef:
              refName: greet
              arguments:
                who: "${ .name }"
            retryRef: Twice
            actionDataFilter:
              toStateData: .greeting
        onErrors:
          - errorRef: Boom
            transition: Done
        transition: Decide
      - name: Decide
        type: switch
        dataConditions:
          - condition: .greeting != null
            transition: Done
        defaultCondition:
          end: true
      - name: Done
        type: inject
        data:
          ok: true
        end:
          produceEvents:
            - eventRef: Pong
              data: .greeting
    """)


def check(text: str, name: str = "wf.yaml", **kwargs: Any) -> list[Diagnostic]:
    return check_workflow(text, source_name=name, **kwargs).diagnostics


def lines(text: str, name: str = "wf.yaml", **kwargs: Any) -> list[str]:
    return [str(d) for d in check(text, name, **kwargs)]


def codes(text: str, name: str = "wf.yaml") -> list[str]:
    return [d.code for d in check(text, name)]


def dedent(text: str) -> str:
    return textwrap.dedent(text)
