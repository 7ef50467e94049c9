"""JSON pointers and the map from a pointer to where its value (or key) was written.

A document assembled from several files (the workflow plus referenced ``functions`` files and the
like) keeps one :class:`SourceMap` per file and a :class:`DocumentMap` that says which document
subtree came from which file, so a problem inside a referenced file is reported in THAT file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

Position = tuple[int, int]  # 1-based (line, column)


def escape_token(token: str | int) -> str:
    text = str(token)
    return text.replace("~", "~0").replace("/", "~1") if ("~" in text or "/" in text) else text


def join_pointer(pointer: str, *tokens: str | int) -> str:
    for token in tokens:  # hot path: called for every node of every document
        pointer = f"{pointer}/{escape_token(token)}"
    return pointer


def pointer_from_path(path: Iterable[str | int]) -> str:
    return join_pointer("", *path)


def parent_pointer(pointer: str) -> str:
    return pointer[: pointer.rfind("/")] if pointer else ""


@dataclass
class SourceMap:
    """Positions in one file: where each value starts, and where the key naming it starts."""

    file: str
    values: dict[str, Position] = field(default_factory=dict)
    keys: dict[str, Position] = field(default_factory=dict)

    def locate(self, pointer: str, *, prefer_key: bool = False) -> Position:
        """Position of ``pointer``, or of its nearest ancestor that has one; (0, 0) if none."""
        current = pointer
        while True:
            if prefer_key and current in self.keys:
                return self.keys[current]
            if current in self.values:
                return self.values[current]
            if current in self.keys:
                return self.keys[current]
            if not current:
                return (0, 0)
            current = parent_pointer(current)


@dataclass(frozen=True)
class Mount:
    """The subtree at ``document_pointer`` was read from ``source`` at ``source_pointer``."""

    document_pointer: str
    source: SourceMap
    source_pointer: str


class DocumentMap:
    """Resolves a pointer into the assembled document to (file, pointer in that file, position)."""

    def __init__(self, root: SourceMap) -> None:
        self.root = root
        self._mounts: list[Mount] = []

    def mount(self, document_pointer: str, source: SourceMap, source_pointer: str) -> None:
        self._mounts.append(Mount(document_pointer, source, source_pointer))
        self._mounts.sort(key=lambda m: len(m.document_pointer), reverse=True)

    def resolve(self, pointer: str, *, prefer_key: bool = False) -> tuple[str, str, Position]:
        for mount in self._mounts:
            prefix = mount.document_pointer
            if pointer == prefix or pointer.startswith(prefix + "/"):
                inner = mount.source_pointer + pointer[len(prefix):]
                return mount.source.file, inner, mount.source.locate(inner, prefer_key=prefer_key)
        return self.root.file, pointer, self.root.locate(pointer, prefer_key=prefer_key)
