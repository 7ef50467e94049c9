"""Loads the committed corpus files: multi-document YAML, one ``{case, document, ...}`` per entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"


def load_cases(file_name: str) -> list[Any]:
    """The entries of one corpus file as pytest params, each with its ``case`` as id."""
    with open(CORPUS_DIR / file_name, encoding="utf-8") as stream:
        entries = [entry for entry in yaml.safe_load_all(stream) if entry]
    return [pytest.param(entry, id=entry["case"]) for entry in entries]


def all_documents() -> list[Any]:
    """Every workflow document of every corpus file (a ``state`` entry wrapped in a workflow)."""
    documents = []
    for path in sorted(CORPUS_DIR.glob("*.yaml")):
        for entry in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            documents.append(entry.get("document") or {"id": "t", "specVersion": "0.8", "states": [entry["state"]]})
    return documents
