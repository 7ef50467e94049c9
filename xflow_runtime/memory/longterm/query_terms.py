"""Which words of a question the keyword lists search for (pure).

The keyword lists OR the question's words, so function words ("what", "did", "her", "the")
match nearly every chat message and crowd out the one that shares the question's rare words.
They are dropped — unless the question has nothing else, then it is searched as written.
English only; a question in another language keeps all its words.
"""

from __future__ import annotations

STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not now of off on once only or other our ours ourselves out over own same she
should so some such than that the their theirs them themselves then there these they this those
through to too under until up very was we were what when where which while who whom why will with
would you your yours yourself yourselves s t don doesn didn isn wasn
""".split())


def content_words(words: list[str]) -> list[str]:
    """``words`` (casefolded) without function words, or all of them if nothing else is left."""
    kept = [word for word in words if word not in STOPWORDS]
    return kept or words
