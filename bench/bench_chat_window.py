"""Chat-window resolution: ours (SQLite and pure in-memory) vs LangChain ``trim_messages``.

One history of N messages (user / assistant / parallel tool calls and results, ~100 tokens a
message) is stored in SQLite through ``ChatMemory.append_turn`` (token counts computed once, at
append). Then each window is resolved repeatedly:

* ``chat_window_{token,message}_sqlite``  — ``ChatMemory.resolve_window_sync`` (DB read + select)
* ``chat_window_token_sqlite_async``       — ``await ChatMemory.load_window`` (adds the thread hop)
* ``chat_window_token_sqlite_cold``        — first resolution for a model whose encoding is not
  cached yet (counts the rows it reads, writes them back)
* ``chat_window_{token,message}_pure``     — ``select_window`` over cached counts in memory
* ``langchain_trim_{token,message}``       — ``trim_messages(strategy="last", start_on="human")``
  with a tiktoken o200k counter (token window) or ``len`` (message window) on the same history

The query plan line shows the window read is a range scan of the (chat_id, sequence) primary
key; p95 that stays flat from 10k to 100k messages shows the cost is O(messages kept).

Run: ``python3 bench/bench_chat_window.py [--sizes 10000,100000] [--runs 300]``.
Installs ``langchain-core`` with pip if it is missing (benchmark only).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import itertools
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from xflow_runtime._env import apply_offline_defaults  # noqa: E402

apply_offline_defaults()

from xflow_runtime.memory.chat import (ChatMemory, ChatScope, TokenCounter, WindowPolicy,  # noqa: E402
                                       is_valid_window, select_window)

MODEL = "gpt-4o"
MAX_TOKENS = 4000
MAX_MESSAGES = 20
SCOPE = ChatScope(agent="bench", session="bench-session", user="u", tenant="t")
WORDS = ("order invoice shipping delay refund customer account payment status tracking number "
         "warehouse Paris Berlin Tokyo the a of to and in is was for on with as by at from "
         "please thanks could would should check update résumé naïve 東京 😀").split()


def ensure_langchain() -> None:
    if importlib.util.find_spec("langchain_core") is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "langchain-core"], check=True)


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def make_history(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """Whole turns only, as many as fit in ``n`` messages."""
    rng = random.Random(seed)
    history: list[dict[str, Any]] = []
    for turn in itertools.count():
        messages = [{"role": "user", "content": sentence(rng, rng.randint(40, 120))}]
        if rng.random() < 0.3:
            ids = [f"call_{turn}_{i}" for i in range(rng.randint(1, 3))]
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": cid, "type": "function",
                 "function": {"name": "lookup", "arguments": f'{{"query": "{sentence(rng, 6)}"}}'}}
                for cid in ids]})
            messages.extend({"role": "tool", "tool_call_id": cid, "content": sentence(rng, 80)}
                            for cid in ids)
        messages.append({"role": "assistant", "content": sentence(rng, rng.randint(40, 120))})
        if len(history) + len(messages) > n:
            return history
        history.extend(messages)
    raise AssertionError("unreachable")


def timings(fn: Callable[[], Any], runs: int, warmup: int = 5) -> list[tuple[float, float]]:
    """(wall ms, CPU ms of this thread) per run. On a shared 2-core machine the wall-clock tail
    includes time the process was not scheduled; the CPU figure shows the cost of the code."""
    for _ in range(warmup):
        fn()
    out = []
    gc.collect()
    gc.disable()  # as timeit does: measure the code, not a collection it happens to trigger
    try:
        for _ in range(runs):
            wall, cpu = time.perf_counter(), time.thread_time()
            fn()
            out.append(((time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000))
    finally:
        gc.enable()
    return out


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[94] if len(values) >= 20 else max(values)


def report(name: str, samples: list[tuple[float, float]], **extra: Any) -> dict[str, float]:
    wall = [w for w, _ in samples]
    cpu = [c for _, c in samples]
    stats = {"p50_ms": statistics.median(wall), "p95_ms": p95(wall)}
    fields = " ".join(f"{k}={v}" for k, v in extra.items())
    print(f"BENCH {name} {fields} runs={len(wall)} p50_ms={stats['p50_ms']:.3f} "
          f"p95_ms={stats['p95_ms']:.3f} cpu_p50_ms={statistics.median(cpu):.3f} "
          f"cpu_p95_ms={p95(cpu):.3f} loadavg={os.getloadavg()[0]:.1f}", flush=True)
    return stats


def to_langchain(history: list[dict[str, Any]]) -> list[Any]:
    import json

    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    out: list[Any] = []
    for m in history:
        if m["role"] == "user":
            out.append(HumanMessage(m["content"]))
        elif m["role"] == "tool":
            out.append(ToolMessage(m["content"], tool_call_id=m["tool_call_id"]))
        else:
            calls = [{"name": c["function"]["name"], "args": json.loads(c["function"]["arguments"]),
                      "id": c["id"]} for c in m.get("tool_calls", [])]
            out.append(AIMessage(m["content"] or "", tool_calls=calls))
    return out


def langchain_counter() -> Callable[[list[Any]], int]:
    """Same accounting as ours: 3 per message + role + text + tool-call arguments (o200k)."""
    import json

    import tiktoken

    encoding = tiktoken.get_encoding("o200k_base")

    def count(messages: list[Any]) -> int:
        total = 0
        for m in messages:
            total += 4 + len(encoding.encode(m.content if isinstance(m.content, str) else str(m.content)))
            for call in getattr(m, "tool_calls", None) or ():
                total += len(encoding.encode(json.dumps(call["args"])))
        return total

    return count


def bench_size(n: int, runs: int, directory: Path) -> None:
    from langchain_core.messages import trim_messages

    history = make_history(n)
    n = len(history)
    counter = TokenCounter.for_model(MODEL)
    start = time.perf_counter()
    counts = [counter.count(m) for m in history]
    cold_count_s = time.perf_counter() - start
    print(f"BENCH chat_token_count_all n={n} encoding={counter.encoding} total_s={cold_count_s:.3f} "
          f"us_per_message={cold_count_s / n * 1e6:.1f} mean_tokens={sum(counts) / n:.1f}", flush=True)

    memory = ChatMemory.open(f"sqlite:///{directory / f'bench_{n}.db'}")
    start = time.perf_counter()
    memory.append_turn_sync(SCOPE, history, model=MODEL)
    print(f"BENCH chat_append_bulk n={n} total_s={time.perf_counter() - start:.3f}", flush=True)

    token_policy = WindowPolicy("token_window", max_tokens=MAX_TOKENS)
    message_policy = WindowPolicy("message_window", max_messages=MAX_MESSAGES)
    window = memory.resolve_window_sync(SCOPE, token_policy, model=MODEL)
    assert is_valid_window(window.messages) and window.tokens <= MAX_TOKENS

    TokenCounter.for_model("gpt-4").raw_count(history[0])  # load cl100k: not part of the window
    cold_start = time.perf_counter()
    cold = memory.resolve_window_sync(SCOPE, token_policy, model="gpt-4")  # cl100k: not cached
    print(f"BENCH chat_window_token_sqlite_cold n={n} encoding={cold.encoding} "
          f"ms={(time.perf_counter() - cold_start) * 1000:.3f} kept={len(cold.messages)}", flush=True)

    with memory.engine.connect() as connection:
        plan = connection.exec_driver_sql(
            "EXPLAIN QUERY PLAN SELECT chat_id, sequence, role, parts, token_counts "
            "FROM xflow_chat_messages WHERE chat_id = (SELECT id FROM xflow_chats WHERE "
            "tenant_id = ? AND agent_id = ? AND user_id = ? AND memory_id = ?) AND tenant_id = ? "
            "AND agent_id = ? AND user_id = ? ORDER BY sequence DESC LIMIT 64",
            ("t", "bench", "u", "bench-session", "t", "bench", "u")).all()
    print(f"BENCH chat_window_query_plan n={n} plan=\"{' | '.join(str(r[-1]) for r in plan)}\"",
          flush=True)

    ours_token = report("chat_window_token_sqlite", timings(
        lambda: memory.resolve_window_sync(SCOPE, token_policy, model=MODEL), runs),
        n=n, max_tokens=MAX_TOKENS, kept=len(window.messages))
    message_window = memory.resolve_window_sync(SCOPE, message_policy, model=MODEL)
    ours_message = report("chat_window_message_sqlite", timings(
        lambda: memory.resolve_window_sync(SCOPE, message_policy, model=MODEL), runs),
        n=n, max_messages=MAX_MESSAGES, kept=len(message_window.messages))

    async def async_runs() -> list[tuple[float, float]]:
        out = []
        for i in range(runs + 5):
            start = time.perf_counter()
            await memory.load_window(SCOPE, token_policy, model=MODEL)
            if i >= 5:
                out.append(((time.perf_counter() - start) * 1000, float("nan")))  # 2 threads
        return out

    report("chat_window_token_sqlite_async", asyncio.run(async_runs()), n=n, max_tokens=MAX_TOKENS)

    pairs = [(m["role"], c) for m, c in zip(history, counts)]
    report("chat_window_token_pure", timings(
        lambda: select_window(reversed(pairs), max_messages=None, max_tokens=MAX_TOKENS), runs),
        n=n, max_tokens=MAX_TOKENS)
    report("chat_window_message_pure", timings(
        lambda: select_window(reversed(pairs), max_messages=MAX_MESSAGES, max_tokens=None), runs),
        n=n, max_messages=MAX_MESSAGES)

    lc_history = to_langchain(history)
    lc_runs = 5 if n <= 20_000 else 2
    count = langchain_counter()
    trimmed: list[Any] = []

    def trim_tokens() -> None:
        trimmed[:] = trim_messages(lc_history, max_tokens=MAX_TOKENS, token_counter=count,
                                   strategy="last", start_on="human")

    lc_token = report("langchain_trim_token", timings(trim_tokens, lc_runs, warmup=1),
                      n=n, max_tokens=MAX_TOKENS, kept=len(trimmed))
    lc_message = report("langchain_trim_message", timings(
        lambda: trim_messages(lc_history, max_tokens=MAX_MESSAGES, token_counter=len,
                              strategy="last", start_on="human"), max(lc_runs, 50), warmup=2),
        n=n, max_messages=MAX_MESSAGES)
    print(f"BENCH chat_window_speedup n={n} "
          f"token_p50_ratio={lc_token['p50_ms'] / ours_token['p50_ms']:.0f} "
          f"token_p95_vs_trim_p50={lc_token['p50_ms'] / ours_token['p95_ms']:.0f} "
          f"message_p50_ratio={lc_message['p50_ms'] / ours_message['p50_ms']:.1f}", flush=True)
    memory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    ensure_langchain()
    with tempfile.TemporaryDirectory(prefix="xflow-bench-") as directory:
        for size in (int(s) for s in args.sizes.split(",")):
            bench_size(size, args.runs, Path(directory))


if __name__ == "__main__":
    main()
