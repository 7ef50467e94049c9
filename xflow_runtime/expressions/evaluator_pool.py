"""Evaluations that may not end, run where they can be stopped: a small pool of evaluator processes.

Each evaluation checks out one idle process (or starts one), sends the program and the input, and
waits for the answer within the evaluation's budget (:mod:`xflow_runtime.expressions.limits`). Past
the budget, or when the waiting task is cancelled (a state timeout), the process is killed and a new
one takes its place later; a process that dies (out of its ``RLIMIT_AS``) is reported as a result too
large. The event loop is never blocked by the evaluation itself: the asynchronous form waits on the
process's pipe with ``add_reader``. The synchronous form (for the few callers that are not
coroutines) blocks its thread for at most the budget.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import select
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from xflow_runtime.errors import ExpressionError, ExpressionTimeout, ExpressionTooLarge
from xflow_runtime.expressions.jq_expressions import jq_failure
from xflow_runtime.expressions.limits import EvaluationLimits, real_time, resolve_once

_LENGTH = struct.Struct(">I")
_WORKER = str(Path(__file__).with_name("evaluator_worker.py"))
#: Idle processes kept; more are started when more evaluations run at once, up to MAX_PROCESSES.
POOL_SIZE = 2
#: Evaluator processes alive at once; further evaluations wait for one (outside their budget).
MAX_PROCESSES = 4
_WAIT_FOR_PROCESS = 0.005
#: How long a new process may take to start (not counted in any evaluation's budget).
_START_TIMEOUT = 30.0


class _Died(Exception):
    """The evaluator process ended while working (killed by its memory limit, or by us)."""


class EvaluatorProcess:
    """One evaluator process and the bytes it has sent that nobody consumed yet."""

    def __init__(self, limits: EvaluationLimits, on_exit: Callable[[], None]):
        self.key = _key(limits)
        self._on_exit = on_exit
        self._killed = False
        self.process = subprocess.Popen(
            [sys.executable, "-I", _WORKER, str(limits.max_memory_bytes), str(limits.max_result_bytes)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={}, bufsize=0,
            close_fds=True)
        self._out = self.process.stdout.fileno()  # type: ignore[union-attr]
        os.set_blocking(self._out, False)
        self._buffer = bytearray()
        self.ready = False

    # --- framing ---------------------------------------------------------------------------------
    def send(self, program: str, input_text: str) -> None:
        body = program.encode("utf-8")
        data = input_text.encode("utf-8")
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(_LENGTH.pack(len(body)) + body + _LENGTH.pack(len(data)))
            stdin.write(data)
        except (BrokenPipeError, OSError) as exc:
            raise _Died() from exc

    def _pump(self) -> None:
        """Read what the pipe has; :class:`_Died` at end of file."""
        while True:
            try:
                chunk = os.read(self._out, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                raise _Died()
            self._buffer += chunk

    def _take(self) -> tuple[bytes, bytes] | None:
        """A whole response from the buffer, if one arrived (consumes the ready byte first)."""
        if not self._ready_now() or len(self._buffer) < 1 + _LENGTH.size:
            return None
        size = _LENGTH.unpack_from(self._buffer, 1)[0]
        end = 1 + _LENGTH.size + size
        if len(self._buffer) < end:
            return None
        status, body = bytes(self._buffer[:1]), bytes(self._buffer[1 + _LENGTH.size:end])
        del self._buffer[:end]
        return status, body

    def _ready_now(self) -> bool:
        if not self.ready and self._buffer:
            del self._buffer[:1]
            self.ready = True
        return self.ready

    # --- waiting ---------------------------------------------------------------------------------
    def wait_ready_blocking(self) -> None:
        deadline = time.monotonic() + _START_TIMEOUT
        while not self._ready_now():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Died()
            select.select([self._out], [], [], remaining)
            self._pump()

    def answer_blocking(self, timeout: float) -> tuple[bytes, bytes] | None:
        deadline = time.monotonic() + timeout
        while True:
            self._pump()
            response = self._take()
            if response is not None:
                return response
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            select.select([self._out], [], [], remaining)

    async def wait_ready(self) -> None:
        if await self._until(lambda: self._ready_now() or None, _START_TIMEOUT) is None:
            raise _Died()

    async def answer(self, timeout: float) -> tuple[bytes, bytes] | None:
        return await self._until(self._take, timeout)

    async def _until(self, parse: Any, timeout: float) -> Any:
        """``parse()``'s first result that is not ``None``, or ``None`` after ``timeout`` seconds."""
        self._pump()
        result = parse()
        if result is not None:
            return result
        loop = asyncio.get_running_loop()
        arrived: asyncio.Future[Any] = loop.create_future()

        def readable() -> None:
            if arrived.done():
                return
            try:
                self._pump()
            except _Died as exc:
                arrived.set_exception(exc)
                return
            parsed = parse()
            if parsed is not None:
                arrived.set_result(parsed)

        loop.add_reader(self._out, readable)
        timer = loop.call_later(timeout, resolve_once, arrived, None)
        try:
            with real_time(loop):
                return await arrived
        finally:
            timer.cancel()
            loop.remove_reader(self._out)

    def kill(self) -> None:
        if self._killed:
            return
        self._killed = True
        self._on_exit()
        process = self.process
        if process.poll() is None:
            process.kill()
        for stream in (process.stdin, process.stdout):
            try:
                stream.close()  # type: ignore[union-attr]
            except OSError:
                pass
        threading.Thread(target=process.wait, daemon=True).start()  # reap without waiting here


class EvaluatorPool:
    """Idle evaluator processes, checked out by one evaluation at a time (thread-safe)."""

    def __init__(self, size: int = POOL_SIZE, limit: int = MAX_PROCESSES):
        self.size = size
        self._idle: list[EvaluatorProcess] = []
        self._lock = threading.Lock()
        self._slots = threading.Semaphore(limit)  # one per live process
        self.started = 0  # processes started so far (for tests and the benchmark)

    def run_blocking(self, program: str, data: Any, limits: EvaluationLimits, expression: str) -> list[Any]:
        input_text = _input_text(data, expression)
        while (worker := self._checkout(limits)) is None:
            time.sleep(_WAIT_FOR_PROCESS)
        try:
            worker.wait_ready_blocking()
            worker.send(program, input_text)
            response = worker.answer_blocking(limits.timeout)
        except _Died:
            worker.kill()
            raise _died(worker, limits, expression) from None
        except BaseException:
            worker.kill()
            raise
        return self._finish(worker, response, limits, expression)

    async def run(self, program: str, data: Any, limits: EvaluationLimits, expression: str) -> list[Any]:
        input_text = _input_text(data, expression)
        while (worker := self._checkout(limits)) is None:
            await asyncio.sleep(_WAIT_FOR_PROCESS)
        try:
            await worker.wait_ready()
            worker.send(program, input_text)
            response = await worker.answer(limits.timeout)
        except _Died:
            worker.kill()
            raise _died(worker, limits, expression) from None
        except BaseException:  # cancelled (a state timeout): the process may still be busy
            worker.kill()
            raise
        return self._finish(worker, response, limits, expression)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()

    # --- internals -------------------------------------------------------------------------------
    def _finish(self, worker: EvaluatorProcess, response: tuple[bytes, bytes] | None,
                limits: EvaluationLimits, expression: str) -> list[Any]:
        if response is None:
            worker.kill()
            raise ExpressionTimeout(f"expression did not finish within its budget of {limits.timeout:g} s",
                                    expression=expression)
        self._release(worker)
        status, body = response
        if status == b"O":
            return json.loads(body)
        if status == b"L":
            raise _too_large(limits, expression)
        raise jq_failure(body.decode("utf-8", "replace"), expression)

    def _checkout(self, limits: EvaluationLimits) -> EvaluatorProcess | None:
        """An idle process with these limits, else a new one, else ``None`` (all slots busy)."""
        key = _key(limits)
        with self._lock:
            for index, worker in enumerate(self._idle):
                if worker.key == key:
                    del self._idle[index]
                    if worker.process.poll() is None:
                        return worker
                    worker.kill()
                    break
            if not self._slots.acquire(blocking=False):
                if not self._idle:
                    return None
                self._idle.pop(0).kill()  # idle with other limits: make room
                self._slots.acquire(blocking=False)
        self.started += 1
        return EvaluatorProcess(limits, self._slots.release)

    def _release(self, worker: EvaluatorProcess) -> None:
        with self._lock:
            if len(self._idle) < self.size:
                self._idle.append(worker)
                return
        worker.kill()


def _key(limits: EvaluationLimits) -> tuple[int, int]:
    return limits.max_memory_bytes, limits.max_result_bytes


def _input_text(data: Any, expression: str) -> str:
    try:
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ExpressionError(f"expression input is not JSON: {exc}", expression=expression) from None


def _died(worker: EvaluatorProcess, limits: EvaluationLimits, expression: str) -> ExpressionError:
    if not worker.ready:
        return ExpressionError("the evaluator process did not start (is the jq package installed?)",
                               expression=expression)
    return _too_large(limits, expression)


def _too_large(limits: EvaluationLimits, expression: str) -> ExpressionTooLarge:
    return ExpressionTooLarge(
        f"expression result exceeds its budget ({limits.max_result_bytes} bytes of result, "
        f"{limits.max_memory_bytes} bytes of memory while evaluating)", expression=expression)


#: The pool every evaluation shares.
POOL = EvaluatorPool()
atexit.register(POOL.close)
