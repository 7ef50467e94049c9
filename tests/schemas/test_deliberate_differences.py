"""Every deliberate difference from the official 0.8 schema, pinned by an explicit case.

The list lives in ``specs/schemas.md``; ``differences.py`` recognises each one so the random
differential test can leave such documents out. Here each case checks the official verdict, ours,
that the classifier names exactly that difference, and where our error points.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.schemas import differences
from tests.schemas.corpus import load_cases
from tests.schemas.validators import REPO, official_valid, our_errors, ours_valid

CASES = load_cases("deliberate-differences.yaml")


@pytest.mark.parametrize("entry", CASES)
def test_deliberate_difference(entry: dict[str, Any]) -> None:
    document = entry["document"]
    assert differences.deliberate_differences(document) == {entry["difference"]}
    assert official_valid(document) is (entry["official"] == "valid")
    assert ours_valid(document) is (entry["ours"] == "valid")
    if entry["ours"] == "invalid":
        assert entry["path"] in [path for path, _ in our_errors(document)]


def test_every_listed_difference_has_a_case_and_a_line_in_the_spec() -> None:
    covered = {param.values[0]["difference"] for param in CASES}
    assert covered == set(differences.ALL)
    spec = (REPO / "specs" / "schemas.md").read_text(encoding="utf-8")
    for code in differences.ALL:
        assert f"`{code}`" in spec, f"specs/schemas.md does not list {code}"
