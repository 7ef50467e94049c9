"""History records: stamping, batching and folding into state visits (pure)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, strategies as st

from xflow_runtime.history import HistoryBuffer, summarize


def observed(states: list[str], *, usage: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    clock = iter(range(1000))
    buffer = HistoryBuffer(clock=lambda: float(next(clock)), keep=True)
    buffer({"event": "workflow_started", "instance_id": "i", "input": {"x": 1}})
    for name in states:
        buffer({"event": "state_entered", "instance_id": "i", "state": name, "input": name})
        buffer({"event": "state_exited", "instance_id": "i", "state": name, "output": name.lower(),
                "usage": usage})
    buffer({"event": "workflow_completed", "instance_id": "i", "output": {"done": True}})
    return buffer.records


def test_records_are_numbered_and_drained_in_batches() -> None:
    seen: list[int] = []
    buffer = HistoryBuffer(clock=lambda: 0.0, listeners=[lambda r: seen.append(r["seq"])])
    buffer({"event": "a"})
    buffer({"event": "b"})
    assert buffer.pending == 2
    assert [r["seq"] for r in buffer.drain()] == [0, 1]
    buffer({"event": "c"})
    assert [(r["seq"], r["event"]) for r in buffer.drain()] == [(2, "c")]
    assert buffer.drain() == [] and seen == [0, 1, 2]


def test_a_loop_is_one_visit_per_entry_with_durations() -> None:
    summary = summarize(observed(["Inc", "Check", "Inc", "Check"]))
    assert [v.state for v in summary.visits] == ["Inc", "Check", "Inc", "Check"]
    assert all(v.duration == 1.0 for v in summary.visits)
    assert summary.input == {"x": 1} and summary.output == {"done": True}
    assert summary.usage is None


def test_usage_is_summed_over_states() -> None:
    summary = summarize(observed(["Ask", "Answer"], usage={"prompt_tokens": 10, "total_tokens": 15,
                                                           "cost": 0.5, "model": "m"}))
    assert summary.usage == {"prompt_tokens": 20, "total_tokens": 30, "cost": 1.0}


def test_records_of_subflows_do_not_become_visits_of_the_instance() -> None:
    records = observed(["Call"])
    records.insert(2, {"seq": 99, "at": 1.5, "event": "state_entered", "instance_id": "child", "state": "Inner"})
    assert [v.state for v in summarize(records).visits] == ["Call"]


@given(st.lists(st.sampled_from(["A", "B", "C"]), max_size=8), st.randoms())
def test_stored_twice_or_out_of_order_the_history_reads_the_same(states: list[str], random: Any) -> None:
    records = observed(states)
    replayed = records + random.sample(records, k=len(records) // 2)
    random.shuffle(replayed)
    once, twice = summarize(records), summarize(replayed)
    assert [v.to_dict() for v in twice.visits] == [v.to_dict() for v in once.visits]
    assert (twice.input, twice.output, twice.error) == (once.input, once.output, once.error)
