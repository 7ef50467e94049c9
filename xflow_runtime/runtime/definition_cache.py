"""A cache of checked workflow documents for the ``xflow`` command (specs/performance.md §5).

Checking a document (PyYAML, the JSON Schema validator built from the dialect's schemas, lint)
is about a fifth of the CPU of a cold ``xflow run --ephemeral``; the plan compiled from a checked
document is not. So ``xflow run`` keeps, per document, the checked document as JSON and, when
the same document is run again, compiles the plan from it without importing the checker.

What makes a hit safe — a hit only when every input of the check is byte for byte the same:

- the key is a SHA-256 of the document's text, its folder (resolved), the name it is shown as,
  ``strict``, the state types known, and a fingerprint of the checker: every ``.py`` file of
  this package by name, size and mtime (what Python checks before it runs a module's cached
  bytecode), the bytes of the schema files, the Python version, and the files of PyYAML,
  jsonschema-rs, jsonschema, referencing and jq (name, size, mtime: a reinstall changes them).
  A checkout whose code changes under the same version gets new keys.
- the entry lists every file the check read besides the document (references,
  ``dataInputSchema``) with the SHA-256 of its bytes; a hit reads them again and compares.
- only documents that loaded without an error and compiled are stored, only when JSON gives
  back exactly the same values and types (no ``1`` for ``1.0``, no string for an integer key),
  never pickle; an entry that does not parse, names another key or fails to compile is a miss
  and the full check runs (and stores it again).
- at most :data:`MAX_ENTRIES` entries: each write removes the oldest beyond that.

Warnings of a cached document are not shown again: ``xflow run`` never shows them
(``xflow validate`` does, and never reads this cache). ``XFLOW_DEFINITION_CACHE=off`` turns the
cache off; another value is the folder to use (default ``$XDG_CACHE_HOME/xflow-runtime/definitions``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
from contextlib import contextmanager
from contextvars import ContextVar
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from xflow_runtime.plan.states import WorkflowPlan

#: Bump when the entry format or what a key covers changes.
FORMAT = 1
MAX_ENTRIES = 64
ENVIRONMENT_VARIABLE = "XFLOW_DEFINITION_CACHE"
_OFF = ("0", "off", "false", "no")
_PACKAGE = Path(__file__).resolve().parents[1]
#: Libraries the check runs, fingerprinted by their files' names, sizes and mtimes.
_LIBRARIES = ("yaml", "jsonschema_rs", "jsonschema", "referencing", "jq")

_log = logging.getLogger(__name__)
#: The folder of the cache while a command loads its workflow (None: no cache), per context so an
#: embedder's or a test's later loads in the same process never read it.
_directory: ContextVar[Path | None] = ContextVar("xflow_definition_cache", default=None)
_fingerprint: str | None = None


@contextmanager
def enabled_from_environment() -> Iterator[None]:
    """Use the cache for the loads inside the ``with`` (``xflow run``), unless the environment
    turns it off."""
    setting = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    folder: Path | None
    if setting.lower() in _OFF:
        folder = None
    elif setting:
        folder = Path(setting)
    else:
        home = os.path.expanduser("~")
        base = os.environ.get("XDG_CACHE_HOME") or (os.path.join(home, ".cache") if home != "~" else "")
        # no home to put it in: no cache, rather than a "~/.cache" folder under the current one
        folder = Path(base) / "xflow-runtime" / "definitions" if base else None
    token = _directory.set(folder)
    try:
        yield
    finally:
        _directory.reset(token)


def cached_plan(source: str, base_dir: Path, shown_as: str, strict: bool) -> "WorkflowPlan | None":
    """The plan compiled from the cached checked document, or None (not cached, stale, unreadable)."""
    folder = _directory.get()
    if folder is None:
        return None
    key = _key(source, base_dir, shown_as, strict)
    if key is None:
        return None
    try:
        entry = json.loads((folder / f"{key}.json").read_bytes())
        if entry.get("format") != FORMAT or entry.get("key") != key:
            return None
        for name, digest in entry["files"]:
            if hashlib.sha256(Path(name).read_bytes()).hexdigest() != digest:
                return None
        document = entry["document"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    from xflow_runtime.plan import compile_plan

    try:
        plan: WorkflowPlan = compile_plan(document, base_dir=str(base_dir), source_name=shown_as)
    except Exception:  # noqa: BLE001 - the full check runs and reports it as it always did
        _log.debug("cached definition %s did not compile; checking again", key, exc_info=True)
        return None
    return plan


def store(source: str, base_dir: Path, shown_as: str, strict: bool, document: dict[str, Any],
          referenced_files: tuple[Path, ...]) -> None:
    """Keep a document that loaded and compiled; never fails the command (a write error is logged)."""
    folder = _directory.get()
    if folder is None:
        return
    key = _key(source, base_dir, shown_as, strict)
    if key is None:
        return
    try:
        files = [[os.path.abspath(path), hashlib.sha256(Path(path).read_bytes()).hexdigest()]
                 for path in referenced_files]
        text = json.dumps({"format": FORMAT, "key": key, "files": files, "document": document},
                          allow_nan=False, separators=(",", ":"))
        if not _same(json.loads(text)["document"], document):
            return
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = folder / f".{key}.{os.getpid()}.tmp"
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, folder / f"{key}.json")
        _prune(folder)
    except (OSError, ValueError, TypeError, RecursionError) as exc:
        _log.debug("definition cache not written: %s", exc)


def _key(source: str, base_dir: Path, shown_as: str, strict: bool) -> str | None:
    # One line of text may be read as a file name by the loader (load_workflow's path-or-text):
    # what that file holds would not be in the key, so such documents are never cached.
    if "\n" not in source:
        return None
    from xflow_runtime import state_types

    digest = hashlib.sha256()
    for part in (str(FORMAT), _runtime_fingerprint(), str(base_dir.resolve()), shown_as, str(bool(strict)),
                 ",".join(state_types.known())):
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    digest.update(source.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _runtime_fingerprint() -> str:
    global _fingerprint
    if _fingerprint is None:
        digest = hashlib.sha256(sys.version.encode())
        schemas = _PACKAGE / "_schemas"
        if not schemas.is_dir():
            schemas = _PACKAGE.parent / "schemas"
        # Our modules by name, size and mtime: what Python itself checks before it runs a module's
        # cached bytecode, so the checker that would run is the one the key names. The schemas
        # (data, not code) by their bytes.
        for entry in _files(str(_PACKAGE), ".py"):
            info = entry.stat()
            digest.update(f"{entry.path}:{info.st_size}:{info.st_mtime_ns}\0".encode())
        for entry in _files(str(schemas), ".json"):
            with open(entry.path, "rb") as file:
                digest.update(entry.name.encode() + b"\0" + file.read() + b"\0")
        for name in _LIBRARIES:
            spec = find_spec(name)
            origin = None if spec is None else spec.origin
            digest.update(f"{name}={origin}\0".encode())
            if origin:
                with os.scandir(os.path.dirname(origin)) as entries:
                    for item in sorted(entries, key=lambda e: e.name):
                        if item.is_file():
                            info = item.stat()
                            digest.update(f"{item.name}:{info.st_size}:{info.st_mtime_ns}\0".encode())
        _fingerprint = digest.hexdigest()
    return _fingerprint


def _files(folder: str, suffix: str) -> list[os.DirEntry[str]]:
    """Every file ending in ``suffix`` under ``folder``, by path (os.scandir: a tenth of rglob's cost)."""
    found: list[os.DirEntry[str]] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    found.extend(_files(entry.path, suffix))
            elif entry.name.endswith(suffix):
                found.append(entry)
    return sorted(found, key=lambda entry: entry.path)


def _same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (``1 == 1.0 == True`` is not enough here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _prune(folder: Path) -> None:
    entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
    for old in entries[:-MAX_ENTRIES] if len(entries) > MAX_ENTRIES else ():
        old.unlink(missing_ok=True)
