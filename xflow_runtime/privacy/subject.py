"""How a data subject (a user of a tenant) is named where their data is stored.

Light on purpose: the durable engine labels every instance started for a user with
:func:`subject_key` (a DBOS workflow attribute), so erasure and export find the user's instances
without reading (unpickling) what DBOS recorded.
"""

from __future__ import annotations

import hashlib

from xflow_runtime.errors import XFlowError

#: The DBOS workflow attribute holding the subject key of the instance's user.
SUBJECT_ATTRIBUTE = "xflow.subject"


class SubjectErased(XFlowError):
    """The user was erased after this writer started (an instance step or extraction in flight
    during the erasure): nothing of the user is written back."""


def subject_key(tenant: str, user: str) -> str:
    """The key of a user's consent/erasure row and instance label: a hash, so it names nobody."""
    return hashlib.sha256(f"{tenant}\x00{user}".encode()).hexdigest()
