"""The diagram's data (specs/console.md §2): every state of every definition is a node, every way
out of a state an edge of the right kind, and the layered layout places every node in its own box
with ordinary edges going down. Pure: no server."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xflow_runtime.definition import load_workflow
from xflow_runtime.plan.graph import plan_graph
from xflow_runtime.plan.layout import NODE_HEIGHT, NODE_WIDTH, layered_layout

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).with_name("workflows")
DEFINITIONS = sorted([*HERE.glob("*.yaml"), *(ROOT / "workflows").glob("*.yaml"),
                      *(ROOT / "tests" / "service" / "workflows").glob("*.yaml")])
DEFINITIONS = [p for p in DEFINITIONS if not p.name.endswith(".replies.yaml")]


def _edges(path: Path) -> set[tuple[str, str, str, str | None]]:
    graph = plan_graph(load_workflow(path).plan)
    return {(e["from"], e["to"], e["kind"], e["label"]) for e in graph["edges"]}


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return abs(a[0] - b[0]) < NODE_WIDTH and abs(a[1] - b[1]) < NODE_HEIGHT


@pytest.mark.parametrize("path", DEFINITIONS, ids=lambda p: p.name)
def test_every_state_of_every_example_is_a_node_and_every_edge_joins_two_states(path: Path) -> None:
    plan = load_workflow(path).plan
    graph = plan_graph(plan)
    names = [n["id"] for n in graph["nodes"]]
    assert names == list(plan.states)
    assert all(e["from"] in plan.states and e["to"] in plan.states for e in graph["edges"])
    assert [n["id"] for n in graph["nodes"] if n["start"]] == [plan.start]
    layout = layered_layout(names, [(e["from"], e["to"]) for e in graph["edges"]], graph["start"])
    assert set(layout.positions) == set(names)
    assert layout.layers[plan.start] == 0


def test_the_showcase_draws_switch_branches_errors_compensation_and_waits() -> None:
    graph = plan_graph(load_workflow(HERE / "showcase.yaml").plan)
    assert _edges(HERE / "showcase.yaml") == {
        ("classify", "reserve", "condition", "big"), ("classify", "wait-payment", "default", "default"),
        ("reserve", "child", "transition", None), ("reserve", "failed-note", "error", "Boom"),
        ("reserve", "release", "compensation", "compensated by"), ("child", "pause", "transition", None)}
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert nodes["classify"]["end"] and not nodes["reserve"]["end"]  # a branch of the switch ends
    assert nodes["child"]["subflows"] == ["greet"] and nodes["release"]["compensation"]
    assert (nodes["pause"]["waits"], nodes["wait-payment"]["waits"]) == ("timer", "event")


def test_agent_and_task_outcomes_are_edges_and_a_next_turn_is_a_loop() -> None:
    assert _edges(HERE / "chat.yaml") == {("talk", "talk", "outcome", "next turn: otherwise")}
    talk = plan_graph(load_workflow(HERE / "chat.yaml").plan)["nodes"][0]
    assert (talk["agent"], talk["waits"], talk["memory"]) == (
        "host", "message", {"scope": "user", "memory_id": None, "max_messages": 20, "max_tokens": None})
    assert _edges(HERE / "expense-approval.yaml") == {
        ("approve", "approved", "outcome", "$taskOutcome.returnValues.approved"),
        ("approve", "rejected", "outcome", "otherwise"), ("approve", "escalated", "timeout", "timeout"),
        ("approve", "withdrawn", "delete", "deleted")}
    support = plan_graph(load_workflow(ROOT / "workflows" / "support-agent.yaml").plan)
    assert {e["kind"] for e in support["edges"]} == {"outcome"}


@st.composite
def graphs(draw: st.DrawFn) -> tuple[list[str], list[tuple[str, str]]]:
    names = [f"s{i}" for i in range(draw(st.integers(1, 14)))]
    pairs = draw(st.lists(st.tuples(st.sampled_from(names), st.sampled_from(names)), max_size=30))
    return names, pairs


@settings(max_examples=300, deadline=None)
@given(graphs())
def test_the_layout_places_every_node_in_its_own_box_and_forward_edges_go_down(graph) -> None:
    names, pairs = graph
    layout = layered_layout(names, pairs, names[0])
    assert set(layout.positions) == set(names)
    boxes = list(layout.positions.values())
    assert not any(_overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    for a, b in pairs:
        if (a, b) not in layout.back_edges:
            assert layout.layers[b] > layout.layers[a], (a, b)
    assert all((a, b) in set(pairs) for a, b in layout.back_edges)
    assert all(0 <= x and x + NODE_WIDTH <= layout.width and 0 <= y and y + NODE_HEIGHT <= layout.height
               for x, y in boxes)
    assert layered_layout(names, pairs, names[0]) == layout  # deterministic


def test_a_long_chain_is_laid_out_without_recursion() -> None:
    names = [f"s{i}" for i in range(5000)]
    layout = layered_layout(names, list(zip(names, names[1:])) + [(names[-1], names[0])], names[0])
    assert layout.layers[names[-1]] == 4999 and layout.back_edges == {(names[-1], names[0])}

