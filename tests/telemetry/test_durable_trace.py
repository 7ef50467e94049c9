"""One trace across a SIGKILL and a resume of a durable instance; steps answered from history
emit no LLM or tool spans (specs/observability.md, "One trace per instance")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine.crash_support import REPO, sigkill_when

AGENT_TOOLS = [{"name": "lookup", "description": "Look an order up.",
                "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
                "execution": {"functionRef": {"refName": "lookup"}}}]


def write_workflow(path: Path) -> Path:
    document = {
        "id": "resumable", "version": "1.0", "specVersion": "0.8", "start": "Ask",
        "functions": [{"name": "lookup", "type": "custom", "operation": "lookup"},
                      {"name": "slow", "type": "custom", "operation": "slow"}],
        "states": [
            {"name": "Ask", "type": "aiagent", "agentName": "first", "userMessage": "${ .question }",
             "tools": AGENT_TOOLS, "agentOutcomes": [{"finish": True, "dataFilter": {"toStateData": "${ .ask }"}}],
             "transition": "Slow"},
            {"name": "Slow", "type": "operation", "actions": [{"functionRef": {"refName": "slow"}}],
             "transition": "Answer"},
            {"name": "Answer", "type": "aiagent", "agentName": "second", "userMessage": "summarise",
             "agentOutcomes": [{"finish": True, "dataFilter": {"toStateData": "${ .answer }"}}], "end": True},
        ],
    }
    target = path / "resumable.json"
    target.write_text(json.dumps(document))
    return target


def process(mode: str, tmp_path: Path, spans: Path, api_base: str, pause: float) -> subprocess.Popen[str]:
    arguments = [mode, f"sqlite:///{tmp_path / 'store.sqlite'}", str(tmp_path / "resumable.json"), "traced-1",
                 str(spans), str(tmp_path / "calls.log"), api_base]
    return subprocess.Popen([sys.executable, "-m", "tests.telemetry.durable_process", *arguments], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO), "TRACE_TEST_PAUSE": str(pause)})


def read_spans(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def names(spans: list[dict]) -> list[str]:
    return sorted(span["name"] for span in spans)


@pytest.mark.slow
def test_a_resumed_instance_continues_its_trace_and_replays_no_llm_or_tool_span(tmp_path, scripted_model):
    write_workflow(tmp_path)
    scripted_model.set_script([{"tool_calls": [{"name": "lookup", "arguments": {"id": 7}}]},
                               {"text": "Order 7 shipped."}, {"text": "All done."}])
    log = tmp_path / "calls.log"
    before, after = tmp_path / "before.jsonl", tmp_path / "after.jsonl"

    first = process("start", tmp_path, before, scripted_model.api_base, pause=120)
    assert sigkill_when(first, lambda: log.exists() and "start slow" in log.read_text()), first.communicate()
    killed = read_spans(before)
    # What ended before the kill was exported; the execution's own span and the state in flight were not.
    assert names(killed) == ["chat gpt-4o", "chat gpt-4o", "execute_tool lookup", "invoke_agent first",
                             "xflow.state Ask"]
    (trace_id,) = {span["trace_id"] for span in killed}
    ask = next(span for span in killed if span["name"] == "xflow.state Ask")
    first_execution = ask["parent_id"]  # the first invoke_workflow span: lost with the process

    second = process("resume", tmp_path, after, scripted_model.api_base, pause=0)
    out, err = second.communicate(timeout=180)
    assert second.returncode == 0, err
    assert json.loads(out)["answer"]["response"] == "All done."
    assert log.read_text().splitlines() == ["lookup", "start slow", "start slow"]  # the tool ran once
    assert len(scripted_model.chat_requests) == 3  # the replay asked the model nothing again

    resumed = read_spans(after)
    # Nothing of the replayed first visit (its chats, its tool call, its agent turn, its state).
    assert names(resumed) == ["chat gpt-4o", "invoke_agent second", "invoke_workflow resumable",
                              "xflow.state Answer", "xflow.state Slow"]
    assert {span["trace_id"] for span in resumed} == {trace_id}
    (workflow,) = [span for span in resumed if span["name"] == "invoke_workflow resumable"]
    assert workflow["attributes"]["xflow.resumed"] is True
    assert workflow["parent_id"] == first_execution
    (link,) = workflow["links"]
    assert (link["trace_id"], link["span_id"]) == (trace_id, first_execution)
    assert link["attributes"] == {"xflow.link.reason": "resumed"}
    by_name = {span["name"]: span for span in resumed}
    assert by_name["xflow.state Slow"]["parent_id"] == workflow["span_id"]
    assert by_name["xflow.state Answer"]["parent_id"] == workflow["span_id"]
    assert by_name["chat gpt-4o"]["parent_id"] == by_name["invoke_agent second"]["span_id"]


WAITING = {
    "id": "waiting", "version": "1.0", "specVersion": "0.8", "start": "Ask",
    "events": [{"name": "Approved", "type": "approved", "source": "/t"}],
    "states": [
        {"name": "Ask", "type": "aiagent", "agentName": "first", "userMessage": "hello",
         "agentOutcomes": [{"finish": True, "dataFilter": {"toStateData": "${ .ask }"}}], "transition": "Wait"},
        {"name": "Wait", "type": "event", "onEvents": [{"eventRefs": ["Approved"]}], "transition": "Answer"},
        {"name": "Answer", "type": "aiagent", "agentName": "second", "userMessage": "summarise",
         "agentOutcomes": [{"finish": True, "dataFilter": {"toStateData": "${ .answer }"}}], "end": True},
    ],
}


async def test_an_instance_that_waited_across_a_restart_joins_its_trace(tmp_path, scripted_model):
    """The runtime closes while the instance waits (its spans end, marked stopped, and are
    exported); the next runtime continues it when the event comes: same trace, parent and link
    the stopped execution's span, and no chat span for the agent turn before the wait."""
    from tests.telemetry.support import Collected, waiting_for_its_event
    from xflow_runtime import Runtime
    from xflow_runtime.llm import LLMSettings

    (tmp_path / "waiting.json").write_text(json.dumps(WAITING))
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    scripted_model.set_script([{"text": "hi"}, {"text": "bye"}])
    before, after = Collected(), Collected()
    first = Runtime("durable", database_url=url, llm=LLMSettings(api_base=scripted_model.api_base),
                    **before.providers())
    await first.start(first.load(tmp_path / "waiting.json"), {}, instance_id="wait-1")
    await waiting_for_its_event("wait-1")
    await first.close()
    stopped = before.one("invoke_workflow waiting")
    assert stopped.attributes["xflow.stopped"] is True and stopped.parent is None
    assert before.one("xflow.state Wait").attributes["xflow.stopped"] is True

    async with Runtime("durable", database_url=url, llm=LLMSettings(api_base=scripted_model.api_base),
                       **after.providers()) as second:
        await second.send_event({"type": "approved", "source": "/t", "data": {}}, instance_id="wait-1")
        output = await second.instance("wait-1").result(timeout=60)
    assert output["answer"]["response"] == "bye"
    resumed = after.one("invoke_workflow waiting")
    assert resumed.attributes["xflow.resumed"] is True
    assert resumed.context.trace_id == stopped.context.trace_id
    assert resumed.parent.span_id == stopped.context.span_id
    (link,) = resumed.links
    assert link.context.span_id == stopped.context.span_id
    assert [span.name for span in after.named("chat ")] == ["chat gpt-4o"]
    assert after.named("invoke_agent ") == [after.one("invoke_agent second")]
    assert {span.context.trace_id for span in after.spans} == {stopped.context.trace_id}
