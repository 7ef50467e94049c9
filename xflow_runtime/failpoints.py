"""Named crash points, for the crash tests of effects that span two stores (specs/states-human.md
§2, §7): ``XFLOW_CRASH_AT=name[,name…]`` in the environment makes the process exit at once
(``os._exit(86)``, no cleanup, as a kill would) when it reaches a point of that name. Unset — the
normal case — a crash point costs one dictionary lookup. Only whoever controls the process's
environment can set it, and it can do no more than stop the process."""

from __future__ import annotations

import os

CRASH_EXIT_CODE = 86


def crash_point(name: str) -> None:
    wanted = os.environ.get("XFLOW_CRASH_AT")
    if wanted and name in wanted.split(","):
        os._exit(CRASH_EXIT_CODE)
