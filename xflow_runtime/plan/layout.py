"""A small layered (Sugiyama-style) layout for the state diagram: pure Python, deterministic.

1. Back edges are found by a depth-first walk from the start state (then from any state not yet
   reached, in definition order), so loops (a retry transition back, a chat turn) do not push
   states down forever.
2. A state's layer is the longest path to it over the remaining (acyclic) edges.
3. Within a layer, states are ordered by the mean position of their neighbours in the layer
   above, then below (a few sweeps), which removes most crossings of ordinary workflows.
4. Layers are centred; every state gets a box of the same size, so no two boxes overlap.

Long edges are not routed around boxes: the browser draws them as curves (specs/console.md §2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

NODE_WIDTH = 196
NODE_HEIGHT = 52
GAP_X = 36
GAP_Y = 64
MARGIN = 24
_SWEEPS = 4


@dataclass(frozen=True)
class Layout:
    positions: dict[str, tuple[int, int]]  # the top-left corner of each node's box
    layers: dict[str, int]
    back_edges: frozenset[tuple[str, str]]
    width: int
    height: int


def layered_layout(nodes: Sequence[str], edges: Iterable[tuple[str, str]], start: str | None = None) -> Layout:
    order = list(dict.fromkeys(nodes))
    known = set(order)
    pairs = [(a, b) for a, b in edges if a in known and b in known]
    successors: dict[str, list[str]] = {n: [] for n in order}
    for a, b in pairs:
        if b not in successors[a]:
            successors[a].append(b)
    back = _back_edges(order, successors, start)
    forward = {n: [m for m in successors[n] if (n, m) not in back] for n in order}
    layers = _longest_path_layers(order, forward)
    rows = _ordered_rows(order, layers, forward)
    widest = max((len(row) for row in rows), default=0)
    full = widest * NODE_WIDTH + max(widest - 1, 0) * GAP_X
    positions: dict[str, tuple[int, int]] = {}
    for depth, row in enumerate(rows):
        used = len(row) * NODE_WIDTH + max(len(row) - 1, 0) * GAP_X
        left = MARGIN + (full - used) // 2
        for index, name in enumerate(row):
            positions[name] = (left + index * (NODE_WIDTH + GAP_X), MARGIN + depth * (NODE_HEIGHT + GAP_Y))
    height = 2 * MARGIN + len(rows) * NODE_HEIGHT + max(len(rows) - 1, 0) * GAP_Y
    return Layout(positions, layers, frozenset(back), 2 * MARGIN + full, height)


def _back_edges(order: list[str], successors: dict[str, list[str]], start: str | None) -> set[tuple[str, str]]:
    back: set[tuple[str, str]] = set()
    state: dict[str, int] = {}  # 1 on the walk's stack, 2 finished
    roots = ([start] if start in successors else []) + order
    for root in roots:
        if root in state:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]  # iterative: a long chain must not hit the recursion limit
        state[root] = 1
        while stack:
            name, index = stack[-1]
            if index == len(successors[name]):
                state[name] = 2
                stack.pop()
                continue
            stack[-1] = (name, index + 1)
            target = successors[name][index]
            if state.get(target) == 1:
                back.add((name, target))
            elif target not in state:
                state[target] = 1
                stack.append((target, 0))
    return back


def _longest_path_layers(order: list[str], forward: dict[str, list[str]]) -> dict[str, int]:
    incoming = {n: 0 for n in order}
    for name in order:
        for target in forward[name]:
            incoming[target] += 1
    layer = {n: 0 for n in order}
    ready = [n for n in order if incoming[n] == 0]
    while ready:
        name = ready.pop(0)
        for target in forward[name]:
            layer[target] = max(layer[target], layer[name] + 1)
            incoming[target] -= 1
            if incoming[target] == 0:
                ready.append(target)
    return layer


def _ordered_rows(order: list[str], layers: dict[str, int], forward: dict[str, list[str]]) -> list[list[str]]:
    depth = max(layers.values(), default=-1) + 1
    rows: list[list[str]] = [[] for _ in range(depth)]
    for name in order:
        rows[layers[name]].append(name)
    predecessors: dict[str, list[str]] = {n: [] for n in order}
    for name in order:
        for target in forward[name]:
            predecessors[target].append(name)
    for sweep in range(_SWEEPS):
        downward = sweep % 2 == 0
        indices = range(1, depth) if downward else range(depth - 2, -1, -1)
        for i in indices:
            neighbour_row = rows[i - 1] if downward else rows[i + 1]
            where = {name: position for position, name in enumerate(neighbour_row)}
            links = predecessors if downward else forward
            rows[i] = _by_barycentre(rows[i], links, where)
    return rows


def _by_barycentre(row: list[str], links: dict[str, list[str]], where: dict[str, int]) -> list[str]:
    def key(item: tuple[int, str]) -> float:
        position, name = item
        placed = [where[n] for n in links[name] if n in where]
        return sum(placed) / len(placed) if placed else float(position)

    return [name for _, name in sorted(enumerate(row), key=key)]  # sorted is stable: ties keep their order
