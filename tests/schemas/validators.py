"""The two validators the differential tests compare: ours and the official SW 0.8 schema.

The official schema files are reference material outside the repository; CI clones the repository
with ``shared/`` beside it, so they are looked up at ``<repo>/../shared/reference/sw-0.8-schema``.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator
from referencing import Registry, Resource

from xflow_runtime.definition.schema_registry import workflow_validator

REPO = Path(__file__).resolve().parents[2]
OFFICIAL_DIR = REPO.parent / "shared" / "reference" / "sw-0.8-schema"


@functools.cache
def official_validator() -> Draft7Validator:
    """The official 0.8 ``workflow.json`` validator, every file registered under its ``$id``."""
    if not (OFFICIAL_DIR / "workflow.json").is_file():
        pytest.skip(f"official Serverless Workflow 0.8 schemas not found at {OFFICIAL_DIR} "
                    "(expected ../shared beside the repository)")
    documents = [json.loads(p.read_text()) for p in sorted(OFFICIAL_DIR.glob("*.json"))]
    registry = Registry().with_resources(
        (document["$id"], Resource.from_contents(document)) for document in documents
    )
    root = next(d for d in documents if d["$id"].endswith("/workflow.json"))
    return Draft7Validator(root, registry=registry)


def official_valid(document: Any) -> bool:
    return official_validator().is_valid(document)


def ours_valid(document: Any) -> bool:
    return workflow_validator().is_valid(document)


def our_errors(document: Any) -> list[tuple[str, str]]:
    """``(json_path, message)`` of every error our schema reports, sorted by path."""
    errors = workflow_validator().iter_errors(document)
    return sorted((error.json_path, error.message) for error in errors)
