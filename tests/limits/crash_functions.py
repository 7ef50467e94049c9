"""A custom function that kills its own process (the poison-pill test)."""

from __future__ import annotations

import os


def die() -> None:
    os._exit(3)
