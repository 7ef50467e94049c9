"""The replay rules of the durable engine, one small case each (``engine/durable/replay.py``).

A recording maps operation numbers to the names DBOS stored; ``next_move`` says what a call does
when the next number is ``head``. These are pure functions: every case runs in microseconds, and
the crash tests (``test_crash_recovery.py``, ``test_crash_races.py``) check the same rules end to end.
"""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from xflow_runtime.engine.durable.replay import (
    Call,
    Move,
    Recording,
    call_name,
    next_move,
    parse_call_name,
)

NOTHING_ENDED = frozenset[str]()


def move(steps: dict[int, str], head: int, call: Call, ended: frozenset[str] = NOTHING_ENDED) -> Move:
    return next_move(Recording.of(steps), head, call.name, call, ended.__contains__)


# --- names -------------------------------------------------------------------------------------
def test_a_call_name_carries_its_scope_and_number() -> None:
    assert call_name("1:Quick/0:charge#1", "/3.work", 2) == "1:Quick/0:charge#1 @/3.work#2"
    assert parse_call_name("1:Quick/0:charge#1 @/3.work#2") == ("1:Quick/0:charge#1", "/3.work", "2")


def test_names_of_dbos_and_history_operations_have_no_place() -> None:
    assert parse_call_name("DBOS.recv") is None
    assert parse_call_name("xflow.history") is None


@given(base=st.text(min_size=1).filter(lambda text: "\x00" not in text),
       path=st.lists(st.from_regex(r"[0-9]{1,3}\.[a-z0-9]{1,6}", fullmatch=True), max_size=4),
       number=st.integers(min_value=0, max_value=10**6))
def test_any_step_name_round_trips(base: str, path: list[str], number: int) -> None:
    scope = "".join(f"/{part}" for part in path)
    assert parse_call_name(call_name(base, scope, number)) == (base, scope, str(number))


# --- what a recording says ---------------------------------------------------------------------
def test_a_timer_owns_the_number_after_its_clock_reading() -> None:
    recording = Recording.of({1: "xflow.timer @/0.timer#0"})
    assert recording.owners == {1: "/0.timer", 2: "/0.timer"}


def test_a_receive_marker_owns_the_two_numbers_dbos_recv_draws() -> None:
    recording = Recording.of({4: "xflow.receive:cloudevents @/inbox#0", 6: "DBOS.sleep"})
    assert recording.owners == {4: "/inbox", 5: "/inbox", 6: "/inbox"}


def test_a_cancellation_marker_makes_the_call_doomed_and_its_numbers_dead() -> None:
    recording = Recording.of({9: "xflow.cancelled:3,4:1 @/0.2#2"})
    assert recording.doomed == {("/0.2", 1)}
    assert recording.dead == {3, 4}
    assert recording.owners[3] == recording.owners[4] == recording.owners[9] == "/0.2"


def test_a_cancelled_history_flush_dooms_no_call() -> None:
    recording = Recording.of({5: "xflow.cancelled:4:- @/0.timer#1"})
    assert recording.doomed == set()
    assert recording.dead == {4}


def test_outcomes_are_keyed_by_the_group_that_raced() -> None:
    recording = Recording.of({7: "xflow.outcome:won:0,2 @/1.b0#3", 8: "xflow.outcome:timer @#0"})
    assert recording.outcomes == {"/1.b0#3": "won:0,2", "#0": "timer"}


# --- next_move -----------------------------------------------------------------------------------
CHARGE = Call("1:Pay/0:charge#1", "", 0)
OTHER = Call("1:Pay/1:other#1", "/0.1", 0)


def test_beyond_the_recording_every_call_takes_the_next_number() -> None:
    assert move({1: CHARGE.name}, head=2, call=OTHER) is Move.TAKE


def test_a_recorded_call_takes_its_own_number() -> None:
    assert move({1: OTHER.name, 2: CHARGE.name}, head=2, call=CHARGE) is Move.TAKE


def test_a_recorded_call_waits_while_the_next_number_belongs_to_a_live_scope() -> None:
    assert move({1: OTHER.name, 2: CHARGE.name}, head=1, call=CHARGE) is Move.WAIT


def test_a_number_of_an_ended_scope_is_skipped() -> None:
    steps = {1: OTHER.name, 2: CHARGE.name}
    assert move(steps, head=1, call=CHARGE, ended=frozenset({"/0.1"})) is Move.SKIP


def test_a_recorded_history_flush_is_performed_by_whoever_meets_it() -> None:
    assert move({1: "xflow.history", 2: CHARGE.name}, head=1, call=CHARGE) is Move.FLUSH


def test_a_dead_number_is_skipped_at_once() -> None:
    # The branch /0.1 was cancelled in flight at 1; its marker is at 3. A winner's call at 2 must
    # not wait for a number nobody will draw again.
    steps = {2: CHARGE.name, 3: "xflow.cancelled:1:0 @/0.1#1"}
    assert move(steps, head=1, call=CHARGE) is Move.SKIP


def test_a_doomed_call_blocks_instead_of_drawing() -> None:
    steps = {2: CHARGE.name, 3: "xflow.cancelled:1:0 @/0.1#1"}
    assert move(steps, head=1, call=OTHER) is Move.BLOCK
    assert move(steps, head=5, call=OTHER) is Move.BLOCK  # even beyond the recording


def test_a_call_in_flight_at_a_crash_takes_its_unowned_number_again() -> None:
    # Nothing completed at 1 and no marker names it: the process died while it ran.
    assert move({2: OTHER.name}, head=1, call=CHARGE) is Move.TAKE


def test_a_recorded_call_never_takes_an_unowned_number() -> None:
    # It has its own number further on; the gap goes to a call that is not recorded (or, after a
    # grace period with no such call, is left unused).
    assert move({2: CHARGE.name}, head=1, call=CHARGE) is Move.WAIT


def test_a_timer_takes_an_unowned_number_only_with_a_free_one_after_it() -> None:
    timer = Call("xflow.timer", "/0.timer", 0)
    assert move({2: OTHER.name}, head=1, call=timer) is Move.WAIT
    assert move({3: OTHER.name}, head=1, call=timer) is Move.TAKE


def test_a_receive_takes_an_unowned_number_only_where_dbos_recv_fits_after_it() -> None:
    receive = Call("xflow.receive:cloudevents", "/inbox", 0)
    # The marker was never written (crash) but DBOS.recv had recorded its timeout at 3.
    assert move({3: "DBOS.sleep", 4: OTHER.name}, head=1, call=receive) is Move.TAKE
    assert move({2: OTHER.name}, head=1, call=receive) is Move.WAIT
    # ...and an ordinary call does not take a number whose neighbours belong to a receive.
    assert move({3: "DBOS.sleep", 4: OTHER.name}, head=2, call=CHARGE) is Move.WAIT


def test_the_ci_failure_of_2026_11_20_cannot_happen_again() -> None:
    """The recording that made a replay give DBOS.recv a cancelled timer's number: charge, the
    timer's flush, the timer's clock and (cancelled, so unrecorded) wait, then the event wait.
    The replay's timer was cancelled before it drew anything. Now the timer's numbers are owned by
    its scope and skipped once it has ended; the receive waits for its own marker."""
    receive = Call("xflow.receive:cloudevents", "/inbox", 0)
    steps = {1: "1:Quick/0:charge#1 @/0.work#0", 2: "xflow.history", 3: "xflow.timer @/0.timer#0",
             5: "xflow.outcome:work @#0", 6: "xflow.history", 7: receive.name, 9: "DBOS.sleep"}
    ended = frozenset({"/0.work", "/0.timer"})
    assert move(steps, head=3, call=receive, ended=ended) is Move.SKIP
    assert move(steps, head=4, call=receive, ended=ended) is Move.SKIP
    assert move(steps, head=4, call=receive) is Move.WAIT  # while the timer's task still runs
    assert move(steps, head=7, call=receive, ended=ended) is Move.TAKE


@pytest.mark.parametrize("head", [1, 2, 3])
def test_history_flushes_are_interchangeable_but_never_skipped(head: int) -> None:
    steps = {1: "xflow.history", 2: "xflow.history", 3: "xflow.history", 4: CHARGE.name}
    assert move(steps, head=head, call=CHARGE, ended=frozenset({""})) is Move.FLUSH
