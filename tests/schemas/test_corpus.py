"""The hand-written 0.8 corpus: both schemas agree, and ours points at the right place."""

from __future__ import annotations

from typing import Any

import pytest

from tests.schemas.corpus import load_cases
from tests.schemas.differences import deliberate_differences
from tests.schemas.validators import official_valid, our_errors, ours_valid


@pytest.mark.parametrize("entry", load_cases("sw08-valid.yaml"))
def test_spec_example_shapes_are_valid_in_both(entry: dict[str, Any]) -> None:
    document = entry["document"]
    assert deliberate_differences(document) == set()
    assert official_valid(document), "fixture must be valid 0.8"
    assert our_errors(document) == []


@pytest.mark.parametrize("entry", load_cases("sw08-invalid.yaml"))
def test_known_mistakes_are_invalid_in_both_at_the_right_pointer(entry: dict[str, Any]) -> None:
    document = entry["document"]
    assert deliberate_differences(document) == set()
    assert not official_valid(document), "fixture must be invalid 0.8"
    assert not ours_valid(document)
    paths = [path for path, _ in our_errors(document)]
    assert entry["path"] in paths
    if entry.get("only"):  # the mistake is reported once, at that path, and nowhere else
        assert paths == [entry["path"]]
