"""Named failure points, for the tests of what a process does when it dies, freezes or stalls at
one exact place (specs/states-human.md §2, §7; specs/deployment.md §3). Set in the environment:

- ``XFLOW_CRASH_AT=name[,name…]``: the process exits at once (``os._exit(86)``, no cleanup, as a
  kill would) when it reaches a point of that name (:func:`crash_point` and :func:`fail_point`);
- ``XFLOW_FREEZE_AT=name[@n][,…]``: the process stops itself (``SIGSTOP``) the n-th time (default
  the first) it reaches the point: every thread freezes right there with whatever it holds (an
  open transaction, its row locks), as a process paused by the machine would; the test sends
  ``SIGCONT``;
- ``XFLOW_PAUSE_AT=name[,…]`` with ``XFLOW_PAUSE_DIR=DIR``: the first thread to reach the point
  writes ``DIR/<name>.reached`` and waits (that thread only: the rest of the process goes on)
  until ``DIR/<name>.go`` exists, at most :data:`PAUSE_LIMIT_SECONDS`;
- ``XFLOW_FAILPOINTS_ARMED=PATH``: freeze and pause points fire only once that file exists (a
  test arms them when the process has reached the state it wants to catch).

Unset — the normal case — a point costs a few dictionary lookups. Only whoever controls the
process's environment can set them, and they can do no more than stop or delay the process.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path

CRASH_EXIT_CODE = 86
#: A paused thread goes on by itself after this long (a test that failed before releasing it).
PAUSE_LIMIT_SECONDS = 120.0

_hits: Counter[str] = Counter()
_paused: set[str] = set()
_lock = threading.Lock()


def crash_point(name: str) -> None:
    wanted = os.environ.get("XFLOW_CRASH_AT")
    if wanted and name in wanted.split(","):
        os._exit(CRASH_EXIT_CODE)


def fail_point(name: str) -> None:
    """A crash, freeze or pause point (whichever the environment names)."""
    crash_point(name)
    armed = os.environ.get("XFLOW_FAILPOINTS_ARMED")
    if armed and not os.path.exists(armed):
        return
    freeze = os.environ.get("XFLOW_FREEZE_AT")
    if freeze:
        _freeze(name, freeze)
    pause = os.environ.get("XFLOW_PAUSE_AT")
    if pause and name in pause.split(","):
        _pause(name)


def _freeze(name: str, wanted: str) -> None:
    for item in wanted.split(","):
        point, _, nth = item.partition("@")
        if point != name:
            continue
        with _lock:
            _hits[name] += 1
            hit = _hits[name]
        if hit == int(nth or 1):
            # at this thread: a stop sent to the process is taken by whichever thread the kernel
            # picks, and on a loaded machine this one could go on (commit, release its locks)
            # until that thread runs; sent to itself, it stops before its next instruction
            signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)


def _pause(name: str) -> None:
    with _lock:
        if name in _paused:
            return
        _paused.add(name)
    folder = Path(os.environ.get("XFLOW_PAUSE_DIR", "."))
    (folder / f"{name}.reached").write_text(str(os.getpid()))
    deadline = time.monotonic() + PAUSE_LIMIT_SECONDS
    while not (folder / f"{name}.go").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
