"""XF130: a misspelled top-level key is a warning (the 0.8 root allows unknown keys)."""

from __future__ import annotations

from tests.definition.helpers import BASE, codes, lines


def test_xf130_misspelled_top_level_key() -> None:
    text = BASE.replace("start: Greet\n", "start: Greet\nconstnats: {a: 1}\n")
    assert lines(text) == ["wf.yaml:4:1 /constnats: warning: unknown top-level key 'constnats' is ignored; did you "
                           "mean 'constants'? [XF130 misspelled-top-level-key]"]


def test_unrelated_extension_keys_stay_silent() -> None:
    assert codes(BASE.replace("start: Greet\n", "start: Greet\nx-owner: team-a\nextensions: []\n")) == []
