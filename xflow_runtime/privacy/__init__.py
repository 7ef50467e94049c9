"""Data-subject rights across every store: erasure (:func:`erase_user`) and export
(:func:`export_user`). Imported lazily: nothing heavy until one is called."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {"erase_user": "erasure", "UserErasureReceipt": "erasure", "StoreErasure": "erasure",
            "ErasureIncomplete": "erasure",
            "export_user": "export", "SUBJECT_ATTRIBUTE": "subject", "subject_key": "subject"}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'xflow_runtime.privacy' has no attribute {name!r}")
    return getattr(importlib.import_module(f"xflow_runtime.privacy.{module}"), name)


__all__ = list(_EXPORTS)
