"""The instance gauge's counts by visible status (``views.visible_counts``) are what counting
``views.status_of`` of every instance gives, for any engine statuses and latest records seen by
the hub (specs/service.md, "Operations"): the rule lives in ``status_of`` alone."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from xflow_runtime.engine.durable.instance_keys import InstanceCounts
from xflow_runtime.service.views import AHEAD_OF_ENGINE, STATUSES, status_of, visible_counts

_engine_statuses = st.sampled_from(["PENDING", "ENQUEUED", "SUCCESS", "ERROR", "CANCELLED",
                                    "MAX_RECOVERY_ATTEMPTS_EXCEEDED", "DELAYED", None])
_events = st.sampled_from([*AHEAD_OF_ENGINE, "state_entered", "llm_call"])


@given(rows=st.dictionaries(st.text("abcdef", min_size=1, max_size=4), _engine_statuses, max_size=30),
       seen=st.dictionaries(st.text("abcdefg", min_size=1, max_size=4), _events, max_size=30))
def test_visible_counts_are_status_of_counted(rows: dict[str, str | None], seen: dict[str, str]) -> None:
    followed = {i: event for i, event in seen.items() if event in AHEAD_OF_ENGINE}  # what the hub hands over
    counts = InstanceCounts(Counter(rows.values()), {i: rows[i] for i in followed if i in rows})
    shown = Counter(status_of({"status": status}, seen.get(i)) for i, status in rows.items())
    assert visible_counts(counts, followed) == {status: shown[status] for status in STATUSES}
