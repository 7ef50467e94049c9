"""Which LLM calls the service streams (specs/service.md, "Chat"): only an instance a stream reads,
unless the embedder's own sink reads every instance's tokens."""
from __future__ import annotations

from xflow_runtime.interpreter.services import SelectiveReplyTokenSink
from xflow_runtime.service.app import TokensToHub
from xflow_runtime.service.live import LiveHub


class OnlyInstanceA:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def __call__(self, instance_id: str, step: str, delta: str, done: bool) -> None:
        self.seen.append((instance_id, delta))

    def wants(self, instance_id: str) -> bool:
        return instance_id == "a"


def test_the_hub_alone_streams_only_instances_a_stream_reads_for_tokens() -> None:
    hub = LiveHub()
    sink = TokensToHub(hub)
    assert isinstance(sink, SelectiveReplyTokenSink)
    assert not sink.wants("a")
    with hub.subscribe("a", tokens=False):
        assert not sink.wants("a")  # a chat request waiting for the reply record reads no tokens
    with hub.subscribe("a"):
        assert sink.wants("a") and not sink.wants("b")


def test_an_embedders_plain_sink_gets_every_instances_tokens() -> None:
    seen: list[str] = []
    sink = TokensToHub(LiveHub(), lambda instance_id, step, delta, done: seen.append(delta))
    assert sink.wants("any")
    sink("any", "s/llm:0", "hello", False)
    assert seen == ["hello"]


def test_an_embedders_selective_sink_adds_its_instances_to_the_hubs() -> None:
    hub, previous = LiveHub(), OnlyInstanceA()
    sink = TokensToHub(hub, previous)
    assert sink.wants("a") and not sink.wants("b")
    with hub.subscribe("b"):
        assert sink.wants("b")
    sink("b", "s/llm:0", "x", False)
    assert previous.seen == [("b", "x")]  # it receives what is streamed; its wants is its own filter
