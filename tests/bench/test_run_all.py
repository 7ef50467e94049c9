"""The report of ``bench/run_all.py`` read from ``BENCH`` lines (pure: no benchmark runs here; CI
runs ``bench/run_all.py --quick``, specs/performance.md §1)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

RUN_ALL = Path(__file__).resolve().parents[2] / "bench" / "run_all.py"


@pytest.fixture(scope="module")
def run_all() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run_all", RUN_ALL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


DURABLE = """noise
BENCH overhead_inprocess steps=10000 total_s=0.300 per_state_us=30.0
BENCH overhead_langgraph steps=10000 total_s=9.000 per_step_us=900.0 version=1.2.24
BENCH overhead_ratio langgraph_over_xflow=30.0 target=30 load=5.0
BENCH durable_sqlite effects=100 rounds=9 per_effect_ms=2.50 raw_dbos_per_effect_ms=2.00 ratio=1.25 best_ratio=1.10 cpu_per_effect_ms=2.28 raw_dbos_cpu_per_effect_ms=2.00 cpu_ratio=1.14 target=1.2 load=4.0
BENCH durable_postgres effects=100 rounds=9 per_effect_ms=3.00 raw_dbos_per_effect_ms=2.80 ratio=1.07 best_ratio=1.2 cpu_per_effect_ms=2.50 raw_dbos_cpu_per_effect_ms=2.00 cpu_ratio=1.25 target=1.2 load=4.5
"""


def test_rows_judge_each_target_on_the_figures_of_the_run(run_all: ModuleType) -> None:
    rows = run_all.durable_rows(run_all.parse_lines(DURABLE), False)
    assert [(r.what, r.ratio, r.met, r.load) for r in rows] == [
        # judged on the process CPU ratio, not the wall-time one (specs/performance.md §2)
        ("durable cost per effect (sqlite), CPU", 1.14, True, 4.0),
        ("durable cost per effect (postgres), CPU", 1.25, False, 4.5),
        ("in-process overhead per state", 30.0, True, 5.0)]


def test_quick_mode_judges_nothing(run_all: ModuleType) -> None:
    rows = run_all.durable_rows(run_all.parse_lines(DURABLE), True)
    assert {r.met for r in rows} == {None}


def test_a_missing_line_is_reported_not_guessed(run_all: ModuleType) -> None:
    with pytest.raises(KeyError, match="durable_postgres"):
        run_all.durable_rows(run_all.parse_lines(DURABLE.replace("BENCH durable_postgres", "# ")), False)


def test_quoted_values_and_incomplete_searches(run_all: ModuleType) -> None:
    lines = run_all.parse_lines(
        'BENCH chat_window_query_plan n=10 plan="SEARCH a USING INDEX b (x=?)"\n'
        "BENCH hybrid_search scope=20000 p95_ms=4.10 complete=0.990 load=3.0\n"
        "BENCH pgvector_default scope=20000 p95_ms=2.05 complete=0.300\n")
    assert lines[0] == ("chat_window_query_plan", {"n": 10.0, "plan": "SEARCH a USING INDEX b (x=?)"})
    [row] = run_all.hybrid_rows(lines, False)
    assert row.met is False and row.ratio == pytest.approx(2.0)  # fast, but not complete


def test_the_first_searches_after_the_load_are_reported_not_judged(run_all: ModuleType) -> None:
    lines = run_all.parse_lines(
        "BENCH hybrid_search_first_pass scope=100000 p95_ms=7.10 server_cpu_ms=4.40 blocks_read=85.0 "
        "complete=1.000 load=1.0\n"
        "BENCH hybrid_search scope=100000 p95_ms=4.80 server_cpu_ms=3.30 blocks_read=0.0 complete=1.000 load=1.0\n"
        "BENCH pgvector_default scope=100000 p95_ms=4.00 complete=1.000\n")
    steady, first = run_all.hybrid_rows(lines, False)
    assert steady.met is True and steady.figure.startswith("4.80 ms")
    assert first.met is None and first.target == "reported" and "85.0 blocks" in first.figure


def test_the_markdown_table_has_a_row_per_figure_and_per_failure(run_all: ModuleType) -> None:
    rows = run_all.durable_rows(run_all.parse_lines(DURABLE), False)
    table = run_all.markdown(rows, {"cold_start": "exit 1: boom"}, False)
    assert table.count("\n| ") == 2 + len(rows) + 1
    assert "| **met** |" in table and "| cold_start | failed: exit 1: boom |" in table


FLEET = """BENCH fleet_1 workers=1 instances=300 per_s=20.00 wall_s=15.0 scaling=1.00 cpu_ms_per_call=10.0 floor_cpu_ms_per_call=4.0 cpu_ratio_floor=2.50 cores=2 load_avg=1.0
BENCH fleet_2 workers=2 instances=300 per_s=34.00 wall_s=8.8 scaling=0.85 cpu_ms_per_call=10.5 floor_cpu_ms_per_call=4.0 cpu_ratio_floor=2.62 cores=2 load_avg=1.5
BENCH fleet_4 workers=4 instances=300 per_s=36.00 wall_s=8.3 scaling=0.45 cpu_ms_per_call=11.0 floor_cpu_ms_per_call=4.0 cpu_ratio_floor=2.75 cores=2 load_avg=2.0
"""


def test_fleet_scaling_is_judged_for_two_workers_only(run_all: ModuleType) -> None:
    rows = run_all.fleet_rows(run_all.parse_lines(FLEET), False)
    judged = [(r.what, r.ratio, r.met) for r in rows if r.met is not None]
    assert judged == [("fleet of 2 worker(s): durable agent instances/s (3 LLM calls, 50 ms)", 0.85, False)]
    assert [r.ratio for r in rows if "CPU" in r.what] == [2.5, 2.62, 2.75]


SERVICE = ("BENCH service sessions=200 messages=5 latency_s=0.05 rounds=2 direct_p50_ms=7800.0 direct_p95_ms=12700.0 "
           "http_p50_ms=8000.0 http_p95_ms=13000.0 overhead_p95_ms=300.0 ratio_mean=1.03 server_overhead_p50_ms=0.80 "
           "server_overhead_p95_ms={p95} paced_sessions=20 think_s=1.0 paced_direct_p95_ms=120.0 "
           "paced_http_p95_ms=126.0 paced_overhead_p95_ms=6.0 errors={errors} rss_per_waiting_kib=216 "
           "direct_cpu_ms=40.00 http_cpu_ms=44.00 overhead_cpu_ms=4.00 load_avg=3.0 load_avg_end=3.5\n")


def test_the_service_overhead_is_judged_on_the_server_timing_figure_and_errors(run_all: ModuleType) -> None:
    met = run_all.service_rows(run_all.parse_lines(SERVICE.format(p95="4.90", errors="0")), False)
    assert [r.met for r in met] == [True, None, None, None] and met[1].ratio == pytest.approx(1.1)
    assert run_all.service_rows(run_all.parse_lines(SERVICE.format(p95="5.10", errors="0")), False)[0].met is False
    assert run_all.service_rows(run_all.parse_lines(SERVICE.format(p95="1.00", errors="2")), False)[0].met is False
