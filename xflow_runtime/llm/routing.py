"""Walking an :data:`~xflow_runtime.llm.config.LLMNode` tree: which target answers a call.

Pure control flow over an injected ``call_target`` coroutine. Why not ``litellm.Router``: it
falls back on every error kind after its own retries (no per-group "only on these status
codes"), groups nest one level only (a fallback group cannot hold a load-balanced group that
holds another fallback group), and its deployment cooldowns are process-wide state shared by
every instance, which makes a durable replay depend on other instances' failures. The whole
walk below is one recorded step, so a replay returns the recorded answer without walking again.
"""

from __future__ import annotations

import random
from typing import Awaitable, Callable, TypeVar

from xflow_runtime.errors import WorkflowError
from xflow_runtime.llm.config import LLMGroup, LLMNode, LLMTarget

T = TypeVar("T")


def pick_weighted(nodes: tuple[LLMNode, ...], rng: random.Random) -> LLMNode:
    """One of ``nodes`` chosen with probability proportional to its weight (all-zero: uniform)."""
    total = sum(node.weight for node in nodes)
    if total <= 0:
        return nodes[rng.randrange(len(nodes))]
    point = rng.random() * total
    for node in nodes:
        point -= node.weight
        if point < 0:
            return node
    return nodes[-1]


def falls_back(error: WorkflowError, on_status_codes: frozenset[int] | None) -> bool:
    """Whether a fallback group moves on after ``error``: any error when no codes are given,
    else only errors whose HTTP status is listed (a timeout counts as 408)."""
    if on_status_codes is None:
        return True
    return error.status is not None and error.status in on_status_codes


async def call_tree(node: LLMNode, call_target: Callable[[LLMTarget], Awaitable[T]], rng: random.Random) -> T:
    """Answer from ``node``: the target itself, or its group's strategy applied recursively."""
    if isinstance(node, LLMTarget):
        return await call_target(node)
    if node.mode == "single":
        return await call_tree(node.targets[0], call_target, rng)
    if node.mode == "loadbalance":
        return await call_tree(pick_weighted(node.targets, rng), call_target, rng)
    return await _fallback(node, call_target, rng)


async def _fallback(group: LLMGroup, call_target: Callable[[LLMTarget], Awaitable[T]], rng: random.Random) -> T:
    last = len(group.targets) - 1
    for index, child in enumerate(group.targets):
        try:
            return await call_tree(child, call_target, rng)
        except WorkflowError as error:
            if index == last or not falls_back(error, group.on_status_codes):
                raise
    raise AssertionError("unreachable: a group has at least one target")
