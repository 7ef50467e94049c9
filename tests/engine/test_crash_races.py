"""Kill durable instances in the middle of *races* — an ``atLeast`` quorum, timers against work,
parallel ``foreach`` iterations, event waits that time out — resume them, and check that the
replay decides every race the way the first run did.

Same method as ``test_crash_recovery.py``: the custom function ``race_functions.record`` appends
``start n`` / ``done n`` / ``cancelled n`` lines to a log; the test SIGKILLs ``xflow run`` when the
log reaches chosen points, runs ``xflow resume`` and compares the final output with an
uninterrupted ``--ephemeral`` run. Every workflow's output is deterministic by construction: a
winning timer is far shorter than the work it cancels (PT0.3S vs 3 s), a losing one far longer
(PT30S vs 0.05 s), the losing ``atLeast`` branch pauses 3 s against winners of 0.1 s.

Which completed calls must never run again: function ``n`` is numbered ``stage*100 + chain*10 +
k`` (a stage is a state, or a group of states run one after the other; a chain is a branch or an
iteration, whose calls run in order ``k``). When a kill comes, a call's result is certainly
checkpointed if its ``done`` line is followed by the ``start`` of a call that ran after it — a
later call of its chain or a call of a later stage — since the workflow moves on only once the
step is recorded. Those calls must not start again after the kill. The others (in flight, or just
done but perhaps not yet recorded) may run again: effects are at-least-once.
"""

from __future__ import annotations

import json
import random
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import pytest
import yaml

from tests.engine.crash_support import REPO, XFLOW, sigkill_when, xflow
RECORD = "python:tests.engine.race_functions:record"
TIMEOUT_ERROR = {"name": "Timeout", "code": "timeout"}


# --- workflows -----------------------------------------------------------------------------------

def call(n: int, pause: float, **extra: Any) -> dict[str, Any]:
    """An action calling ``record`` for function ``n``; its result lands at ``.r.c<n>``."""
    return {"functionRef": {"refName": "record", "arguments": {"log": "${ .log }", "n": n, "pause": pause}},
            "actionDataFilter": {"toStateData": f"${{ .r.c{n} }}"}, **extra}


def document(name: str, states: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"id": name, "version": "1.0", "specVersion": "0.8", "start": states[0]["name"],
            "functions": [{"name": "record", "type": "custom", "operation": RECORD}],
            "errors": [TIMEOUT_ERROR], **extra, "states": states}


def quorum_workflow() -> dict[str, Any]:
    """Two ``atLeast`` parallel states (2 of 3 branches) whose slow branch (3 s) loses and is
    cancelled, with sequential states between and after them."""
    return document("race-quorum", [
        {"name": "Quorum", "type": "parallel", "completionType": "atLeast", "numCompleted": 2, "branches": [
            {"name": "Fast", "actions": [call(100, 0.0), call(101, 0.05)]},
            {"name": "Quick", "actions": [call(110, 0.05), call(111, 0.0)]},
            {"name": "Slow", "actions": [call(120, 3.0), call(121, 0.0)]},
        ], "transition": "Middle"},
        {"name": "Middle", "type": "operation", "actions": [call(200, 0.1), call(201, 0.0)],
         "transition": "Quorum2"},
        {"name": "Quorum2", "type": "parallel", "completionType": "atLeast", "numCompleted": 2, "branches": [
            {"name": "Slow2", "actions": [call(300, 3.0)]},
            {"name": "Fast2", "actions": [call(310, 0.02), call(311, 0.1)]},
            {"name": "Quick2", "actions": [call(320, 0.1), call(321, 0.02)]},
        ], "transition": "Last"},
        {"name": "Last", "type": "operation", "actions": [call(400, 0.05)], "end": True},
    ])


QUORUM_PATH = ["Quorum", "Middle", "Quorum2", "Last"]


def timer_workflow(losing: str) -> dict[str, Any]:
    """Operation states racing timers against work: T1 (action timeout) and T3 (state timeout over
    two parallel actions) time out and ``onErrors`` catches the ``timeout`` error; T0, T2, T4 and
    T5 finish their work before their timers (``losing``: the duration of T0's and T4's timers).
    A losing timer that fired would lead to ``Lost``."""
    lost = [{"errorRef": "Timeout", "transition": "Lost"}]
    return document("race-timers", [
        {"name": "T0", "type": "operation", "timeouts": {"stateExecTimeout": losing},
         "actions": [call(100, 0.05)], "onErrors": lost, "transition": "T1"},
        {"name": "T1", "type": "operation", "timeouts": {"actionExecTimeout": "PT0.3S"},
         "actions": [call(200, 3.0)], "onErrors": [{"errorRef": "Timeout", "transition": "T1Caught"}],
         "transition": "T2"},
        {"name": "T1Caught", "type": "operation", "actions": [call(300, 0.0)], "transition": "T2"},
        {"name": "T2", "type": "operation", "timeouts": {"actionExecTimeout": "PT30S"},
         "actions": [call(400, 0.3)], "onErrors": lost, "transition": "T3"},
        {"name": "T3", "type": "operation", "actionMode": "parallel", "timeouts": {"stateExecTimeout": "PT0.3S"},
         "actions": [call(500, 0.02), call(510, 3.0)],
         "onErrors": [{"errorRef": "Timeout", "transition": "T3Caught"}], "transition": "T4"},
        {"name": "T3Caught", "type": "operation", "actions": [call(600, 0.0)], "transition": "T4"},
        {"name": "T4", "type": "operation", "timeouts": {"stateExecTimeout": losing},
         "actions": [call(700, 0.05)], "onErrors": lost, "transition": "T5"},
        {"name": "T5", "type": "operation", "timeouts": {"stateExecTimeout": "PT30S"},
         "actions": [call(800, 0.3)], "onErrors": lost, "end": True},
        {"name": "Lost", "type": "operation", "actions": [call(900, 0.0)], "end": True},
    ])


TIMER_PATH = ["T0", "T1", "T1Caught", "T2", "T3", "T3Caught", "T4", "T5"]
#: T3's fast action (0.02 s) runs again if a kill comes before it is recorded, and by then T3's
#: timer may have expired (it keeps its deadline across the restart): the timer may cancel it. Its
#: result is dropped either way (a parallel action's result merges only when all succeed).
T3_FAST = frozenset({500})


def foreach_workflow() -> tuple[dict[str, Any], dict[str, Any]]:
    """Two parallel ``foreach`` states: six iterations in batches of two with varied pauses, then
    four unbounded iterations of two calls each."""
    first = [{"n": 100 + 10 * i, "pause": p} for i, p in enumerate([0.12, 0.0, 0.05, 0.15, 0.02, 0.08])]
    second = [{"n": 200 + 10 * i, "pause": p} for i, p in enumerate([0.1, 0.0, 0.06, 0.03])]

    def iteration_call(offset: int, pause: str) -> dict[str, Any]:
        return {"functionRef": {"refName": "record", "arguments": {
            "log": "${ .log }", "n": f"${{ .item.n + {offset} }}", "pause": pause}},
            "actionDataFilter": {"toStateData": f"${{ .k{offset} }}"}}

    return document("race-foreach", [
        {"name": "Batches", "type": "foreach", "inputCollection": "${ .first }", "batchSize": 2,
         "outputCollection": "${ .firstResults }",
         "actions": [{"functionRef": {"refName": "record", "arguments": {
             "log": "${ .log }", "n": "${ .item.n }", "pause": "${ .item.pause }"}}}],
         "transition": "Wide"},
        {"name": "Wide", "type": "foreach", "inputCollection": "${ .second }",
         "outputCollection": "${ .secondResults }",
         "actions": [iteration_call(0, "${ .item.pause }"), iteration_call(1, "${ 0.08 - .item.pause / 2 }")],
         "end": True},
    ]), {"first": first, "second": second}


FOREACH_PATH = ["Batches", "Wide"]


def guarded_subflow() -> dict[str, Any]:
    """One iteration of ``timers_in_iterations_workflow``: a first call, then a second under an
    action timeout of PT2S; the flag says whether the timer won."""
    item = "${ .item.n }"
    return document("race-guarded", [
        {"name": "Work", "type": "operation", "timeouts": {"actionExecTimeout": "PT2S"}, "actions": [
            {"functionRef": {"refName": "record", "arguments": {"log": "${ .log }", "n": item,
                                                                "pause": "${ .item.first }"}},
             "actionDataFilter": {"toStateData": "${ .first }"}},
            {"functionRef": {"refName": "record", "arguments": {"log": "${ .log }", "n": "${ .item.n + 1 }",
                                                                "pause": "${ .item.second }"}},
             "actionDataFilter": {"toStateData": "${ .second }"}},
        ], "onErrors": [{"errorRef": "Timeout", "transition": "Late"}], "transition": "OnTime"},
        {"name": "OnTime", "type": "inject", "data": {"timedOut": False}, "end": True},
        {"name": "Late", "type": "inject", "data": {"timedOut": True}, "end": True},
    ])


def timers_in_iterations_workflow() -> tuple[dict[str, Any], dict[str, Any]]:
    """A parallel ``foreach`` whose iterations (a subflow each) race their own timers: the second
    call of iterations 1 and 3 outlasts its PT2S timer (30 s), those of 0 and 2 beat it. The first
    calls' pauses make the timers start in another order than the iterations (1, 3, 2, 0), and a
    replay returns those calls at once. Then one more call (a kill point once every race is
    decided). Winners are ten times shorter than the timer, losers far longer (the module's rule):
    with PT0.4S against work of 0.2 s, a loaded machine once let a timer win a race its work was
    meant to win (the first run recorded it so and the replay kept it, but the output then differs
    from the reference run's)."""
    items = [{"n": 100 + 10 * i, "first": first, "second": second}
             for i, (first, second) in enumerate([(0.2, 0.05), (0.0, 30.0), (0.1, 0.05), (0.05, 30.0)])]
    return document("race-iteration-timers", [
        {"name": "Fan", "type": "foreach", "inputCollection": "${ .items }", "outputCollection": "${ .results }",
         "actions": [{"subFlowRef": "race-guarded",
                      "actionDataFilter": {"results": "${ {timedOut, first, second} }"}}],
         "transition": "After"},
        {"name": "After", "type": "operation", "actions": [call(200, 0.3)], "end": True},
    ]), {"items": items}


def event_workflow() -> dict[str, Any]:
    """Waits for events that never come, each bounded by ``eventTimeout: PT0.3S``: an event state
    (its actions are skipped), an event-based switch (takes the default), a callback state (moves
    on after its action), and a parallel branch whose action waits for a result event
    (``resultEventTimeout`` raises ``timeout``, caught by the parallel state's ``onErrors``)."""
    events = [{"name": "Ping", "type": "race.ping", "source": "/race", "kind": "consumed"},
              {"name": "Pong", "type": "race.pong", "source": "/race", "kind": "consumed"},
              {"name": "Poke", "type": "race.poke", "source": "/race", "kind": "produced"}]
    lost = [{"errorRef": "Timeout", "transition": "Lost"}]
    short = {"eventTimeout": "PT0.3S"}
    return document("race-events", [
        {"name": "Before", "type": "operation", "actions": [call(100, 0.05)], "transition": "WaitPing"},
        {"name": "WaitPing", "type": "event", "timeouts": short,
         "onEvents": [{"eventRefs": ["Ping"], "actions": [call(900, 0.0)]}], "transition": "Choose"},
        {"name": "Choose", "type": "switch", "timeouts": short,
         "eventConditions": [{"eventRef": "Pong", "transition": "Lost"}],
         "defaultCondition": {"transition": "Callback"}},
        {"name": "Callback", "type": "callback", "timeouts": short, "action": call(200, 0.05),
         "eventRef": "Pong", "onErrors": lost, "transition": "Fan"},
        {"name": "Fan", "type": "parallel", "branches": [
            {"name": "Work", "actions": [call(300, 0.05), call(301, 0.05)]},
            {"name": "Ask", "actions": [{"eventRef": {"triggerEventRef": "Poke", "resultEventRef": "Pong",
                                                      "resultEventTimeout": "PT0.3S"}}]},
        ], "onErrors": [{"errorRef": "Timeout", "transition": "Caught"}], "transition": "Lost"},
        {"name": "Caught", "type": "operation", "actions": [call(400, 0.0)], "end": True},
        {"name": "Lost", "type": "operation", "actions": [call(900, 0.0)], "end": True},
    ], events=events)


EVENT_PATH = ["Before", "WaitPing", "Choose", "Callback", "Fan", "Caught"]
#: The Fan state's Work branch races the Ask branch's 0.3 s wait: a restart slower than that
#: (the timer keeps its deadline across it) lets the timeout cancel Work before it finishes. Its
#: data is dropped either way (the branch failure wins), so the output is the same.
FAN_WORK = frozenset({300, 301})


# --- running and killing -------------------------------------------------------------------------

@dataclass(frozen=True)
class Line:
    event: str  # start | done | cancelled
    n: int
    at: float


def read_log(log: Path) -> list[Line]:
    lines = []
    for text in (log.read_text().splitlines() if log.exists() else []):
        event, n, at = text.split()
        lines.append(Line(event, int(n), float(at)))
    return lines


def write_workflow(path: Path, definition: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(definition, sort_keys=False))
    return path


def reference_run(workflow: Path, data: dict[str, Any], log: Path, options: Sequence[str]) -> Any:
    """The output of an uninterrupted in-process run."""
    done = subprocess.run([*XFLOW, "run", str(workflow), *options, "--ephemeral", "--input",
                           json.dumps({**data, "log": str(log)})],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@dataclass(frozen=True)
class Kill:
    log_length: int  # lines in the log when the process was dead


KillWhen = Callable[[list[Line]], bool]


def kill_when(process: subprocess.Popen[str], log: Path, ready: KillWhen) -> Kill:
    """SIGKILL ``process`` as soon as ``ready(log lines)``; fails if it finished first."""
    if not sigkill_when(process, lambda: ready(read_log(log))):
        out, err = process.communicate()
        raise AssertionError(f"the instance ended before it could be killed: {process.returncode} {out} {err}")
    return Kill(len(read_log(log)))


def progress(log: list[Line]) -> int:
    """Distinct lines so far: a replay that starts again a call it had started adds nothing."""
    return len({(line.event, line.n) for line in log})


def at_progress(lines: int) -> KillWhen:
    return lambda log: progress(log) >= lines


def at_start_of(n: int) -> KillWhen:
    return lambda log: any(line.event == "start" and line.n == n for line in log)


def started_twice(n: int) -> KillWhen:
    return lambda log: sum(line.event == "start" and line.n == n for line in log) >= 2


def after(ready: KillWhen, seconds: float) -> KillWhen:
    """``ready``, then ``seconds`` more (kills in the middle of a wait, which logs nothing)."""
    since: list[float] = []

    def check(log: list[Line]) -> bool:
        if not since:
            if not ready(log):
                return False
            since.append(time.monotonic())
        return time.monotonic() - since[0] >= seconds

    return check


def crash_and_resume(workflow: Path, data: dict[str, Any], db: str, instance: str, log: Path,
                     kill_points: list[KillWhen], downtime: float = 0.0,
                     options: Sequence[str] = ()) -> tuple[Any, list[Kill]]:
    """Run durably, SIGKILL at each point and resume after ``downtime`` seconds; the final output
    and the kills."""
    process = xflow("run", str(workflow), *options, "--db", db, "--id", instance,
                    "--input", json.dumps({**data, "log": str(log)}))
    kills = []
    try:
        for ready in kill_points:
            kills.append(kill_when(process, log, ready))
            time.sleep(downtime)
            process = xflow("resume", instance, "--db", db)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:  # a failed assertion leaves no process behind
            process.kill()
            process.wait()
    assert process.returncode == 0, f"resume failed after kills at {kills}: {err}"
    return json.loads(out), kills


def happened_after(earlier: int, later: int) -> bool:
    """Whether call ``later`` can only start once call ``earlier`` is recorded (numbering in the
    module docstring)."""
    stage, chain, k = earlier // 100, earlier // 10, earlier % 10
    return later // 100 > stage or (later // 10 == chain and later % 10 > k)


def recorded_at(lines: list[Line]) -> set[int]:
    """Calls whose result was certainly checkpointed when the log was ``lines``."""
    recorded = set()
    for index, line in enumerate(lines):
        if line.event == "done" and any(
                later.event == "start" and happened_after(line.n, later.n) for later in lines[index + 1:]):
            recorded.add(line.n)
    return recorded


def assert_recorded_calls_never_ran_again(log: Path, kills: list[Kill]) -> None:
    lines = read_log(log)
    for kill in kills:
        recorded = recorded_at(lines[:kill.log_length])
        again = sorted({line.n for line in lines[kill.log_length:] if line.event == "start" and line.n in recorded})
        assert not again, f"calls {again} were recorded before the kill at line {kill.log_length} and ran again"


def done_calls(log: Path) -> set[int]:
    return {line.n for line in read_log(log) if line.event == "done"}


def assert_succeeded(instance: str, db: str, path: list[str]) -> None:
    shown = subprocess.run([*XFLOW, "show", instance, "--db", db], cwd=REPO, capture_output=True,
                           text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    described = json.loads(shown.stdout)
    assert described["status"] == "SUCCESS", described
    # History is recorded once per state visit, whatever the kills.
    assert [visit["state"] for visit in described["states"]] == path


def check_scenario(tmp_path: Path, definition: dict[str, Any], data: dict[str, Any], path: list[str],
                   seed: int, kills: int, downtime: float = 0.0, kill_points: list[KillWhen] | None = None,
                   undecided: frozenset[int] = frozenset(), subflows: Sequence[dict[str, Any]] = ()
                   ) -> tuple[Path, Any]:
    """Reference run, then a durable run killed ``kills`` times at points of progress drawn with
    ``seed`` (or at ``kill_points``) and resumed after ``downtime``; checks the output, the status,
    the states visited, which calls completed (but the ``undecided`` ones: calls racing a timer
    that may expire while the instance is down, with no effect on the output), and that recorded
    calls never ran again."""
    workflow = write_workflow(tmp_path / f"{definition['id']}.yaml", definition)
    reference_log = tmp_path / "reference.log"
    options = [argument for subflow in subflows for argument in
               ("--workflow", str(write_workflow(tmp_path / f"{subflow['id']}.yaml", subflow)))]
    expected = reference_run(workflow, data, reference_log, options)
    length = progress(read_log(reference_log))
    if kill_points is None:
        kill_points = [at_progress(n) for n in sorted(random.Random(seed).sample(range(1, length - 1), kills))]
    db = f"sqlite:///{tmp_path / 'races.sqlite'}"
    log = tmp_path / "crash.log"
    output, kill_record = crash_and_resume(workflow, data, db, "race-1", log, kill_points, downtime, options)
    assert output == {**expected, "log": str(log)}
    assert_succeeded("race-1", db, path)
    assert done_calls(log) - undecided == done_calls(reference_log) - undecided
    assert_recorded_calls_never_ran_again(log, kill_record)
    return reference_log, expected


# --- scenarios -----------------------------------------------------------------------------------

@pytest.mark.slow
def test_an_at_least_quorum_replays_with_the_same_winners(tmp_path: Path) -> None:
    reference_log, expected = check_scenario(tmp_path, quorum_workflow(), {}, QUORUM_PATH, seed=1121, kills=4)
    # The slow branches lost: cancelled, their data dropped.
    assert sorted(expected["r"]) == sorted(f"c{n}" for n in (100, 101, 110, 111, 200, 201, 310, 311, 320, 321, 400))
    assert {line.n for line in read_log(reference_log) if line.event == "cancelled"} == {120, 300}


@pytest.mark.slow
def test_timers_that_won_or_lost_replay_the_same_way(tmp_path: Path) -> None:
    reference_log, expected = check_scenario(tmp_path, timer_workflow(losing="PT30S"), {}, TIMER_PATH,
                                             seed=2026, kills=4, undecided=T3_FAST)
    assert sorted(expected["r"]) == ["c100", "c300", "c400", "c600", "c700", "c800"]
    assert {line.n for line in read_log(reference_log) if line.event == "cancelled"} == {200, 510}


@pytest.mark.slow
def test_timers_keep_their_outcome_when_resumed_after_their_deadlines(tmp_path: Path) -> None:
    """Killed while T1's action runs (its PT0.3S timer pending), then while T5's runs (T0's and T4's
    PT1S timers lost, T1's and T3's fired); each resume starts after every deadline has passed."""
    check_scenario(tmp_path, timer_workflow(losing="PT1S"), {}, TIMER_PATH, seed=0, kills=0, downtime=1.3,
                   kill_points=[at_start_of(200), at_start_of(800)])


@pytest.mark.slow
def test_parallel_foreach_iterations_replay_without_rerunning_recorded_calls(tmp_path: Path) -> None:
    definition, data = foreach_workflow()
    _, expected = check_scenario(tmp_path, definition, data, FOREACH_PATH, seed=77, kills=4)
    assert expected["firstResults"] == [n * n for n in range(100, 160, 10)]
    assert expected["secondResults"] == [{"k0": n * n, "k1": (n + 1) ** 2} for n in range(200, 240, 10)]


@pytest.mark.slow
def test_event_waits_that_timed_out_time_out_again(tmp_path: Path) -> None:
    _, expected = check_scenario(tmp_path, event_workflow(), {}, EVENT_PATH, seed=5, kills=3,
                                 undecided=FAN_WORK)
    assert sorted(expected["r"]) == ["c100", "c200", "c400"]


@pytest.mark.slow
def test_event_waits_keep_their_outcome_when_resumed_after_their_deadlines(tmp_path: Path) -> None:
    """Killed mid-wait (0.1 s into WaitPing, and into the Ask branch's wait), resumed after the
    deadlines passed."""
    check_scenario(tmp_path, event_workflow(), {}, EVENT_PATH, seed=0, kills=0, downtime=0.6,
                   kill_points=[after(at_start_of(100), 0.15), at_start_of(300)], undecided=FAN_WORK)


@pytest.mark.slow
def test_timers_racing_in_concurrent_iterations_keep_their_outcome(tmp_path: Path) -> None:
    """Killed once every race is decided (during the last call), resumed at once; killed again
    during the replayed last call and resumed after the iterations' deadlines passed."""
    definition, data = timers_in_iterations_workflow()
    _, expected = check_scenario(tmp_path, definition, data, ["Fan", "After"], seed=0, kills=0, downtime=0.5,
                                 kill_points=[at_start_of(200), started_twice(200)], subflows=[guarded_subflow()])
    assert [result["timedOut"] for result in expected["results"]] == [False, True, False, True]
