"""Where SonataFlow's example workflows are: ``<repo>/../shared/reference/sonataflow-examples``.

They are read from there (Apache-2.0, never copied into this repository); tests that need them
skip with the reason when the folder is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "reference" / "sonataflow-examples"
EXAMPLES = CORPUS / "serverless-workflow-examples"
SUFFIXES = (".sw.json", ".sw.yaml", ".sw.yml")

needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"SonataFlow examples not found at {CORPUS}")


def workflow_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(path for path in CORPUS.rglob("*") if path.name.endswith(SUFFIXES))


def example(project: str, name: str) -> Path:
    """``<example project>/src/main/resources/<name>``."""
    return EXAMPLES / project / "src" / "main" / "resources" / name
