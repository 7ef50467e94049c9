"""How a data subject (a user of a tenant) is named where their data is stored.

Light on purpose: the durable engine labels every instance started for a user with
:func:`subject_key` (a DBOS workflow attribute), so erasure and export find the user's instances
without reading (unpickling) what DBOS recorded.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from xflow_runtime.errors import XFlowError

if TYPE_CHECKING:
    from xflow_runtime.memory.longterm.records import ErasureReceipt
    from xflow_runtime.privacy.erasure import UserErasureReceipt

#: The DBOS workflow attribute holding the subject key of the instance's user.
SUBJECT_ATTRIBUTE = "xflow.subject"


class SubjectErased(XFlowError):
    """The user was erased after this writer started (an instance step or extraction in flight
    during the erasure): nothing of the user is written back."""


class ErasureIncomplete(XFlowError):
    """The user's rows are deleted, but old copies of them remain in SQLite WAL files a reader
    still holds (``remains``): run the erasure again once readers finish. Never a success:
    ``receipt`` counts what this run deleted (every store's: :func:`~xflow_runtime.erase_user`; one
    memory store's: ``LongTermMemory.erase_user``), not what is gone."""

    def __init__(self, receipt: "UserErasureReceipt | ErasureReceipt", remains: tuple[str, ...]) -> None:
        self.receipt = receipt
        self.remains = remains
        super().__init__(f"erasure of user {receipt.user!r} incomplete: {receipt.total} rows deleted, but old "
                         f"copies remain in {', '.join(remains)} until its readers finish; run the erasure again")


def subject_key(tenant: str, user: str) -> str:
    """The key of a user's consent/erasure row and instance label: a hash, so it names nobody."""
    return hashlib.sha256(f"{tenant}\x00{user}".encode()).hexdigest()
