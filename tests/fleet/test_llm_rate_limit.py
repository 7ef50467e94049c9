"""``xflow worker --llm-rate-limit``: LLM calls of a whole fleet stay under a provider's limit,
counted in PostgreSQL (specs/deployment.md §1). Two workers, 6 one-call agent instances, a limit of
2 calls per 3 s: the calls need three windows, so from the first call to the last at least one
full window passes; without the limit they all go at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.fleet.support import start_workers
from xflow_runtime.engine.fleet_options import FleetOptions
from xflow_runtime.engine.rate_limit import RateLimit
from xflow_runtime.errors import XFlowError
from xflow_runtime.runtime import Runtime

AGENT = """
id: one-call
version: '1.0'
specVersion: '0.8'
start: Ask
states:
  - name: Ask
    type: aiagent
    agentName: helper
    aiModel: openai/gpt-4o
    userMessage: '${ "question " + (.n | tostring) }'
    end: true
"""


@pytest.mark.parametrize("text, key, calls, period", [("openai=600/60", "openai", 600, 60.0),
                                                      ("gpt-4o=5/1.5", "gpt-4o", 5, 1.5), ("x=3", "x", 3, 60.0)])
def test_rate_limits_parse(text, key, calls, period) -> None:
    assert RateLimit.parse(text) == RateLimit(key, calls, period)


@pytest.mark.parametrize("text", ["openai", "=5/60", "openai=0/60", "openai=five/60", "openai=5/-1"])
def test_a_bad_rate_limit_is_refused(text) -> None:
    with pytest.raises(XFlowError, match="KEY=CALLS/SECONDS"):
        RateLimit.parse(text)


def test_a_limit_names_a_provider_or_a_model() -> None:
    assert RateLimit.parse("openai=1/1").matches("openai/gpt-4o")
    assert RateLimit.parse("gpt-4o=1/1").matches("openai/gpt-4o")
    assert not RateLimit.parse("anthropic=1/1").matches("openai/gpt-4o")


@pytest.mark.postgres
async def test_the_fleet_stays_under_the_limit(postgres_database_url, scripted_model, tmp_path: Path) -> None:
    url = postgres_database_url
    scripted_model.set_script({"default": {"text": "an answer"}})
    (tmp_path / "agent.yaml").write_text(AGENT)
    args = ("--llm-api-base", scripted_model.api_base, "--llm-rate-limit", "openai=2/3")
    workers = start_workers(2, url, *args)
    try:
        async with Runtime("durable", database_url=url, fleet=FleetOptions(run_instances=False)) as runtime:
            plan = runtime.load(tmp_path / "agent.yaml")
            handles = [await runtime.start(plan, {"n": n}) for n in range(6)]
            await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), 90)
    finally:
        for worker in workers:
            worker.terminate()
    arrivals = sorted(request.at for request in scripted_model.chat_requests)
    assert len(arrivals) == 6
    assert arrivals[-1] - arrivals[0] >= 3.0 - 0.2  # three windows of 3 s were needed
