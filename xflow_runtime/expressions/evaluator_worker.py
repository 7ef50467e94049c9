"""The evaluator process: runs libjq programs for the parent, one request at a time.

libjq keeps the GIL for a whole evaluation and has no way to be interrupted, so a program that
loops (``last(repeat(1))``) or allocates without end (``[range(1e9)]``) is run here, where the
parent can stop it by killing the process (specs/limits.md). This module imports only the standard
library and ``jq``: it starts in a few tens of milliseconds.

Protocol (both ways, frames of a 4-byte big-endian length then the bytes):
request = program text, input JSON text; response = one status byte and one frame:
``O`` + JSON array of the outputs, ``E`` + libjq's error message, ``L`` + the size reached.
The process writes ``R`` once when it is ready, sets ``RLIMIT_AS`` from its first argument, runs
at a lower priority than its parent (``nice`` +5), and exits when its input closes.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import sys
from typing import Any, BinaryIO

_LENGTH = struct.Struct(">I")
_CACHE_SIZE = 256


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    chunks, remaining = [], size
    while remaining:
        chunk = stream.read(remaining)
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _read_frame(stream: BinaryIO) -> bytes | None:
    header = _read_exactly(stream, _LENGTH.size)
    if header is None:
        return None
    return _read_exactly(stream, _LENGTH.unpack(header)[0])


def _write(stream: BinaryIO, status: bytes, body: bytes) -> None:
    stream.write(status + _LENGTH.pack(len(body)) + body)
    stream.flush()


def _evaluate(program: Any, input_text: str, max_bytes: int) -> tuple[bytes, bytes]:
    parts: list[str] = []
    size = 2
    try:
        for output in program.input_text(input_text):
            text = json.dumps(output, separators=(",", ":"), ensure_ascii=False)
            size += len(text) + 1
            if size > max_bytes:
                return b"L", str(size).encode()
            parts.append(text)
    except ValueError as exc:
        return b"E", str(exc).encode("utf-8", "replace")
    return b"O", ("[" + ",".join(parts) + "]").encode("utf-8")


def main() -> None:
    import jq

    memory, max_bytes = int(sys.argv[1]), int(sys.argv[2])
    os.nice(5)  # a runaway evaluation yields the CPU to the interpreter's event loop first
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # libjq aborts when out of memory: no core file
    requests, responses = sys.stdin.buffer, sys.stdout.buffer
    programs: dict[str, Any] = {}
    responses.write(b"R")
    responses.flush()
    while True:
        text = _read_frame(requests)
        data = _read_frame(requests) if text is not None else None
        if text is None or data is None:
            return
        source = text.decode("utf-8")
        program = programs.get(source)
        if program is None:
            if len(programs) >= _CACHE_SIZE:
                programs.clear()
            try:
                program = programs[source] = jq.compile(source)
            except ValueError as exc:
                _write(responses, b"E", str(exc).encode("utf-8", "replace"))
                continue
        try:
            status, body = _evaluate(program, data.decode("utf-8"), max_bytes)
        except MemoryError:
            status, body = b"L", b"memory"
        _write(responses, status, body)


if __name__ == "__main__":
    os.environ.clear()  # expressions cannot read the environment, even through a bug in the sandbox
    main()
