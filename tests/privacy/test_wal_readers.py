"""Erasure on SQLite while another process reads the memory store: the deleted rows' old page images
stay in the ``-wal`` file until a checkpoint empties it, and a reader with a transaction open
holds that back. The erasure must then not report success (``ErasureIncomplete`` names the WAL
files; the CLI exits 1 with one line); once the reader is gone, running it again — which finds no
rows left — checkpoints both stores and leaves no trace in the files' bytes. A reader that ends
within the wait does not stop the first erasure. Real files, a real reader process, no mocks.
(DBOS keeps the durable file in rollback-journal mode: there a reader blocks the delete itself,
which then fails after the busy timeout, and its checkpoint has no WAL to empty.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.privacy.conftest import ERASED, PHRASE, TENANT, Stores, seed
from tests.privacy.scan import traces
from tests.privacy.test_erasure_reaches_every_store import encoded_forms
from xflow_runtime import erase_user
from xflow_runtime.cli.main import main
from xflow_runtime.memory.longterm import LongTermMemory, MemoryScope
from xflow_runtime.privacy.erasure import ErasureIncomplete

pytestmark = pytest.mark.slow

#: ``READER USER FILE…``: opens a read transaction on every file, prints "reading", and keeps it
#: until a line arrives on stdin — or, when stdin says "auto" first, until the user's chat
#: messages are gone from the first file (seen by another connection) and half a second more, so
#: it is still reading when the erasure's checkpoint starts waiting, and ends within the wait.
READER = r"""
import sqlite3, sys, time
user, files = sys.argv[1], sys.argv[2:]
readers = []
for path in files:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("BEGIN")
    connection.execute("SELECT count(*) FROM sqlite_master").fetchall()
    readers.append(connection)
print("reading", flush=True)
if sys.stdin.readline().strip() == "auto":
    watcher = sqlite3.connect(files[0], isolation_level=None)
    query = "SELECT count(*) FROM xflow_chat_messages WHERE user_id = ?"
    while watcher.execute(query, (user,)).fetchone()[0]:
        time.sleep(0.05)
    time.sleep(0.5)
for connection in readers:
    connection.execute("COMMIT")
print("done", flush=True)
"""


class Reader:
    """A process holding a read transaction open on the store files."""

    def __init__(self, files: list[Path]) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", READER, ERASED, *map(str, files)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None and self.process.stdout.readline().strip() == "reading"

    def say(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def end(self, *, tell: bool = True) -> None:
        if tell:
            self.say("end")
        assert self.process.stdout is not None and self.process.stdout.readline().strip() == "done"
        self.process.wait(timeout=30)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def files_of(stores: Stores) -> list[Path]:
    """The memory file first (the reader watches it), then the durable file."""
    return [Path(url.removeprefix("sqlite:///")) for url in (stores.memory_url, stores.durable_url)]


def holding_phrase(stores: Stores) -> list[Path]:
    """The files (databases and their WAL) whose raw bytes hold the erased phrase, in clear or in
    DBOS's base64 at any alignment."""
    found = []
    for path in files_of(stores):
        for file in (path, path.with_name(path.name + "-wal")):
            if file.exists() and any(form in file.read_bytes() for form in encoded_forms(PHRASE)):
                found.append(file)
    return found


def clean(stores: Stores) -> None:
    """No row of either store, and no byte of either file or its WAL, holds the erased user."""
    for url in stores.scan_urls():
        assert traces(url, [PHRASE, ERASED]) == {}, url
    assert holding_phrase(stores) == []


@pytest.fixture
def sqlite_stores(tmp_path: Path) -> Stores:
    return Stores(f"sqlite:///{tmp_path / 'store' / 'xflow.sqlite'}")


async def test_a_reader_past_the_wait_makes_the_erasure_say_what_remains_and_a_rerun_finishes_it(
        sqlite_stores: Stores, workflow: Path, llm) -> None:
    stores = sqlite_stores
    runtime = await seed(stores, workflow, llm)
    reader = Reader(files_of(stores)[:1])
    try:
        try:  # while the runtime runs: its connections keep the memory WAL (a last close checkpoints it)
            with pytest.raises(ErasureIncomplete) as raised:
                await erase_user(ERASED, tenant=TENANT, database_url=stores.url, checkpoint_wait=0.3)
        finally:
            await runtime.close()
        memory_wal = f"{files_of(stores)[0]}-wal"
        assert memory_wal in raised.value.remains
        message = str(raised.value)
        assert "rows deleted" in message and memory_wal in message and "run the erasure again" in message
        assert raised.value.receipt.store("memory").deleted["chat_messages"] >= 4  # the rows are gone…
        for url in stores.scan_urls():
            assert traces(url, [PHRASE, ERASED]) == {}, url
        # …but not their old copies: the test is real (the memory WAL holds the phrase's pages)
        assert Path(memory_wal) in holding_phrase(stores)
        # still reading: a rerun cannot finish either, and says so again
        with pytest.raises(ErasureIncomplete):
            await erase_user(ERASED, tenant=TENANT, database_url=stores.url, checkpoint_wait=0.3)
    finally:
        if reader.process.poll() is None:
            reader.end()

    again = await erase_user(ERASED, tenant=TENANT, database_url=stores.url, checkpoint_wait=0.3)
    assert again.total == 0  # nothing left to delete, yet both WALs are checkpointed and emptied
    clean(stores)
    for path in files_of(stores):
        wal = path.with_name(path.name + "-wal")
        assert not wal.exists() or wal.stat().st_size == 0, wal


async def test_a_reader_that_ends_within_the_wait_does_not_stop_the_erasure(
        sqlite_stores: Stores, workflow: Path, llm) -> None:
    stores = sqlite_stores
    runtime = await seed(stores, workflow, llm)
    await runtime.close()
    assert holding_phrase(stores)
    reader = Reader(files_of(stores)[:1])
    try:
        reader.say("auto")  # ends half a second after the user's messages are deleted
        receipt = await erase_user(ERASED, tenant=TENANT, database_url=stores.url, checkpoint_wait=60)
        reader.end(tell=False)  # it ended by itself, during the erasure
    finally:
        reader.kill()
    assert receipt.store("memory").deleted["chat_messages"] >= 4
    clean(stores)


async def test_the_cli_exits_1_with_one_line_while_a_reader_holds_the_wal(
        sqlite_stores: Stores, workflow: Path, llm, capsys: pytest.CaptureFixture[str]) -> None:
    stores = sqlite_stores
    runtime = await seed(stores, workflow, llm)
    await runtime.close()
    reader = Reader(files_of(stores)[:1])
    argv = ["memory", "erase-user", ERASED, "--tenant", TENANT, "--db", stores.url, "--checkpoint-wait", "0.3"]
    try:
        code = await _cli(argv)
        out, err = capsys.readouterr()
        assert code == 1 and out == ""
        (line,) = err.strip().splitlines()
        assert "rows deleted" in line and "-wal" in line and "run the erasure again" in line
    finally:
        if reader.process.poll() is None:
            reader.end()
    assert await _cli(argv) == 0
    capsys.readouterr()
    clean(stores)


async def _cli(argv: list[str]) -> int:
    import asyncio

    return await asyncio.to_thread(main, argv)  # the CLI runs its own event loop


async def test_the_memory_stores_own_erasure_does_not_say_erased_while_the_wal_holds_the_user(
        tmp_path: Path) -> None:
    """``LongTermMemory.erase_user`` (one memory store, the embedder's API) checkpoints too: with a
    reader holding the WAL past the wait it raises, naming the WAL; run again once the reader is
    gone, it finishes and no byte of the file or its WAL holds the user's words."""
    path = tmp_path / "memory.sqlite"
    wal = path.with_name(path.name + "-wal")
    async with LongTermMemory.open(f"sqlite:///{path}") as memory:
        await memory.create(MemoryScope(TENANT, "support", ERASED), "note", f"{PHRASE} in a memory")
        reader = Reader([path])
        try:
            with pytest.raises(ErasureIncomplete) as incomplete:
                await memory.erase_user(TENANT, ERASED, checkpoint_wait=0.3)
            assert incomplete.value.remains == (str(wal),) and incomplete.value.receipt.total >= 1
            assert PHRASE.encode() in wal.read_bytes()  # what the error says is true
            reader.end()
        finally:
            reader.kill()
        again = await memory.erase_user(TENANT, ERASED, checkpoint_wait=0.3)
    assert again.total == 0
    assert not [file for file in (path, wal) if file.exists() and PHRASE.encode() in file.read_bytes()]
