"""Speaker focus: a question that names a participant of the conversation ("What did Melanie
paint?") looks first at what that participant said (pure).

The message lists of a search (keyword and semantic) are reordered by a *stable partition*:
candidates said by a participant the question names (the message's ``name``, as stored by chat
memory) come first, in their list's order, then the others, in theirs. Nothing is dropped, so
a question about what one person said *to* another ("What did Jon recommend to Gina?") names
both and keeps both; a question naming nobody is left as ranked. Measured on the retrieval
bench (``specs/memory-longterm.md``, ablation): the named speaker's evidence otherwise competes
with every turn of the other speaker on the same topic.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

_WORD = re.compile(r"\w+")


def named_speakers(question: str, speakers: Collection[str]) -> set[str]:
    """The ``speakers`` whose every word appears as a word of ``question`` (case-insensitive)."""
    words = set(_WORD.findall(question.casefold()))
    return {name for name in speakers
            if (parts := _WORD.findall(name.casefold())) and all(part in words for part in parts)}


def named_first(keys: Sequence[str], speaker_of: Mapping[str, str], named: Collection[str]) -> list[str]:
    """``keys`` with those said by a ``named`` speaker first; order otherwise kept."""
    if not named:
        return list(keys)
    first = [key for key in keys if speaker_of.get(key) in named]
    return first + [key for key in keys if speaker_of.get(key) not in named]
