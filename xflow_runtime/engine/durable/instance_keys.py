"""What an instance is found by without decoding what DBOS recorded: the attributes written with
it at start (DBOS workflow attributes, a JSON column of ``workflow_status``), the page query of a
list and the keys of event delivery by correlation. Pure: no DBOS, no SQL (``instance_index``
runs the queries); the rules are in ``specs/service.md`` ("Lists", "Events").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from xflow_runtime.privacy.subject import SUBJECT_ATTRIBUTE, subject_key

#: Attributes every instance is started with (besides the user's subject key, if it has a user).
TENANT_ATTRIBUTE = "xflow.tenant"
WORKFLOW_ATTRIBUTE = "xflow.workflow"
#: The key of the instance's first correlation value (:func:`correlation_key`).
CORRELATION_ATTRIBUTE = "xflow.correlation"
CORRELATION_PREFIX = "correlation."
#: :data:`CORRELATION_ATTRIBUTE` of an instance without correlation values: every event reaches it.
UNCORRELATED = ""
#: ... of one whose first value is too long to index: every event is checked against it.
UNINDEXED = "*"
#: Longest indexed key (an attribute and a value as a JSON pair); a longer one is :data:`UNINDEXED`.
MAX_KEY = 300
#: DBOS statuses that end an instance for good (all others are "running" on the wire, specs/service.md).
FINAL_STATUSES = ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")
#: The statuses of an instance that still receives events (ENQUEUED: a resumed or queued instance).
LIVE_STATUSES = ("PENDING", "ENQUEUED")


@dataclass(frozen=True)
class InstanceQuery:
    """One page of a list, newest first: (created_at, id) descending, evaluated by the database.

    ``user``: only that user's instances (by subject key). ``started_from`` inclusive,
    ``started_before`` exclusive, seconds since the epoch (as rows show ``created_at``). ``after``: the
    (created_at, id) of the last row of the previous page. Status: rows whose DBOS status is one of
    ``statuses``, or that are not final (:data:`FINAL_STATUSES`) when ``unsettled`` is true, or not
    final and one of ``unsettled_ids``; ``statuses=None`` means no status condition at all.
    ``except_ids``: rows left out whatever their status (the caller knows they show another)."""

    tenant: str
    limit: int
    user: str | None = None
    workflow: str | None = None
    started_from: float | None = None
    started_before: float | None = None
    after: tuple[float, str] | None = None
    statuses: tuple[str, ...] | None = None
    unsettled: bool = False
    unsettled_ids: tuple[str, ...] = ()
    except_ids: tuple[str, ...] = ()

    @property
    def subject(self) -> str | None:
        return None if self.user is None else subject_key(self.tenant, self.user)


@dataclass(frozen=True)
class InstanceCounts:
    """How many instances a runtime's engine holds, by engine status (the vocabulary of rows'
    ``status``; every tenant's), and the engine status of the instances asked about by id
    (``of``: an id the engine does not hold is absent). Counted by the engine (a GROUP BY on the
    durable one), so it is exact at any number of instances; the visible status of each is the
    service's rule (``service/views.py``)."""

    by_status: Mapping[str | None, int]
    of: Mapping[str, str | None]

    @property
    def total(self) -> int:
        return sum(self.by_status.values())


def instance_attributes(request: Mapping[str, Any]) -> dict[str, str]:
    """The DBOS workflow attributes of an instance started with ``request`` (the recorded request of
    ``DurableBackend.start``): tenant, workflow id, the user's subject key, the correlation key."""
    identity = request.get("identity") or {}
    tenant = identity.get("tenant") or "default"
    attributes = {TENANT_ATTRIBUTE: str(tenant),
                  WORKFLOW_ATTRIBUTE: str((request.get("workflow") or {}).get("id") or ""),
                  CORRELATION_ATTRIBUTE: correlation_key(request.get("labels") or {})}
    if identity.get("user"):
        attributes[SUBJECT_ATTRIBUTE] = subject_key(tenant, identity["user"])
    return attributes


def correlation_key(labels: Mapping[str, str]) -> str:
    """The key an instance is found by: its correlation value of the smallest attribute name. An
    event reaches an instance only if it carries *every* value of the instance, so in particular
    this one: looking up the keys of the event's attributes (:func:`event_keys`) finds every
    instance it may reach, and :func:`correlates` decides."""
    pairs = sorted((name[len(CORRELATION_PREFIX):], str(value)) for name, value in labels.items()
                   if name.startswith(CORRELATION_PREFIX))
    if not pairs:
        return UNCORRELATED
    key = _key(*pairs[0])
    return key if len(key) <= MAX_KEY else UNINDEXED


def event_keys(event: Mapping[str, Any]) -> list[str]:
    """The keys to look up for ``event``: one per attribute (as :func:`correlates` reads it), and the
    two that every event looks up (no correlation, not indexed)."""
    keys = {_key(name, str(value)) for name, value in event.items()}
    return [UNCORRELATED, UNINDEXED, *sorted(key for key in keys if len(key) <= MAX_KEY)]


def correlates(labels: Mapping[str, str], event: Mapping[str, Any]) -> bool:
    """Whether the event carries every correlation value the instance was started with (an
    attribute it does not carry is no match, whatever the value)."""
    return all(attribute in event and str(event[attribute]) == value
               for attribute, value in ((name[len(CORRELATION_PREFIX):], value) for name, value in labels.items()
                                        if name.startswith(CORRELATION_PREFIX)))


def _key(attribute: str, value: str) -> str:
    return json.dumps([attribute, value], ensure_ascii=False, separators=(",", ":"))


def first_millisecond(seconds: float) -> int:
    """The smallest ``created_at`` (epoch ms, as DBOS stores it) whose seconds (``ms / 1000``, as
    rows show it) are ``>= seconds``: conditions on seconds become exact conditions on the column."""
    ms = int(seconds * 1000)
    while ms / 1000.0 < seconds:
        ms += 1
    while (ms - 1) / 1000.0 >= seconds:
        ms -= 1
    return ms
