"""Jinja2 prompt templates are bounded like expressions: time (interrupted, event loop free) and
size (specs/limits.md)."""

from __future__ import annotations

import asyncio
import time

import pytest

from xflow_runtime.agent.prompts import compile_prompt
from xflow_runtime.errors import WorkflowError
from xflow_runtime.expressions.limits import EvaluationLimits, reset_limits, use_limits

SPIN = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}done"


async def test_a_template_that_loops_too_long_fails_with_expression_timeout() -> None:
    token = use_limits(EvaluationLimits(timeout=0.3))
    try:
        lags: list[float] = []
        stop = asyncio.Event()

        async def watch() -> None:
            while not stop.is_set():
                before = time.monotonic()
                await asyncio.sleep(0.01)
                lags.append(time.monotonic() - before - 0.01)

        watcher = asyncio.create_task(watch())
        started = time.monotonic()
        with pytest.raises(WorkflowError) as failure:
            await compile_prompt(SPIN, "/m").render_async({}, {})
        took = time.monotonic() - started
        stop.set()
        await watcher
    finally:
        reset_limits(token)
    assert failure.value.code == "ExpressionTimeout"
    assert took < 0.3 + 1.0
    assert max(lags) < 0.05, f"the event loop was blocked for {max(lags):.3f} s"


@pytest.mark.parametrize("template", ['{{ "x" * 100000000 }}', "{{ 10 ** 100000000 }}",
                                      "{% for i in range(20000) %}{{ data.s }}{% endfor %}"])
async def test_a_template_building_something_huge_fails_with_expression_too_large(template: str) -> None:
    token = use_limits(EvaluationLimits(max_result_bytes=1_000_000))
    try:
        with pytest.raises(WorkflowError) as failure:
            await compile_prompt(template, "/m").render_async({"s": "y" * 100}, {})
    finally:
        reset_limits(token)
    assert failure.value.code == "ExpressionTooLarge"


async def test_an_ordinary_template_renders_as_before() -> None:
    prompt = compile_prompt("Hello {{ name }}, {{ items | length }} items", "/m")
    assert await prompt.render_async({"name": "Ana", "items": [1, 2]}, {}) == "Hello Ana, 2 items"
