"""How the chat-archive search ranks (specs/memory-longterm.md, "Ranking"): function words left
out of keyword queries, weighted RRF, speaker focus, and centred cosine over a scope's message
vectors — pure parts with hypothesis, the SQL on both dialects with vectors chosen by hand."""

from __future__ import annotations

import math

import numpy
import pytest
from hypothesis import given
from hypothesis import strategies as st

from xflow_runtime.memory.chat import ChatMemory, ChatScope
from xflow_runtime.memory.longterm import LongTermMemory, MemoryScope, message_index, reciprocal_rank_fusion
from xflow_runtime.memory.longterm.embedder import Embedded
from xflow_runtime.memory.longterm.search_sql import STOP_WORDS, query_words
from xflow_runtime.memory.longterm.speaker_focus import named_first, named_speakers
from xflow_runtime.storage.database import write_transaction

DANA = MemoryScope("acme", "support", "dana")
MODEL = "openai/hand-made"
WORDS = st.sampled_from(["what", "did", "her", "the", "puppy", "Biscuit", "name", "is", "who", "she", "Lisbon"])


# ------------------------------------------------------------------ keyword query


def test_function_words_are_left_out_of_keyword_queries() -> None:
    assert query_words("What is the name of Caroline's puppy?") == ["name", "caroline", "s", "puppy"]
    assert query_words("Who is she?") == ["who", "is", "she"]  # nothing else left: all of them
    assert query_words("¿Dónde está el perro?") == ["dónde", "está", "el", "perro"]  # other languages as asked


@given(st.lists(WORDS, max_size=12))
def test_a_keyword_query_keeps_its_content_words_in_order(words: list[str]) -> None:
    found = query_words(" ".join(words))
    asked = list(dict.fromkeys(word.casefold() for word in words))
    content = [word for word in asked if word not in STOP_WORDS]
    assert found == (content or asked)


# ------------------------------------------------------------------ weighted RRF


@given(st.dictionaries(st.sampled_from(["messages", "message_semantic", "keyword"]),
                       st.lists(st.integers(0, 20), max_size=15), min_size=1),
       st.dictionaries(st.sampled_from(["messages", "message_semantic", "keyword"]),
                       st.floats(0.05, 4.0), max_size=3))
def test_weighted_fusion_scales_each_lists_share(ranked: dict[str, list[int]], weights: dict[str, float]) -> None:
    fused = reciprocal_rank_fusion(ranked, k=60, weights=weights)
    for item in fused:
        expected = sum(weights.get(name, 1.0) / (60 + keys.index(item.key) + 1)
                       for name, keys in ranked.items() if item.key in keys)
        assert item.score == pytest.approx(expected)
    assert [item.score for item in fused] == sorted((item.score for item in fused), reverse=True)
    assert reciprocal_rank_fusion(ranked, k=60, weights={name: 1.0 for name in ranked}) == \
        reciprocal_rank_fusion(ranked, k=60)


def test_fusion_weights_must_be_positive_numbers() -> None:
    from xflow_runtime.memory.longterm import LongTermOptions
    from xflow_runtime.memory.longterm.errors import LongTermMemoryError

    for bad in (0, -1.0, math.inf, math.nan, True, "1"):
        with pytest.raises(LongTermMemoryError, match="fusion_weights"):
            LongTermOptions(fusion_weights={"messages": bad})  # type: ignore[dict-item]


# ------------------------------------------------------------------ speaker focus


def test_a_speaker_is_named_by_all_of_their_words() -> None:
    speakers = {"Caroline", "Melanie", "Mary Ann", "Assistant"}
    assert named_speakers("What did caroline paint?", speakers) == {"Caroline"}
    assert named_speakers("What did Jon recommend to Melanie and Caroline?", speakers) == {"Caroline", "Melanie"}
    assert named_speakers("Did Mary say so?", speakers) == set()  # one word of two
    assert named_speakers("What did Mary Ann say?", speakers) == {"Mary Ann"}
    assert named_speakers("Carolines?", speakers) == set()  # words, not substrings


@given(st.lists(st.integers(0, 30), unique=True, max_size=25).map(lambda keys: [f"c:{key}" for key in keys]),
       st.dictionaries(st.integers(0, 30).map(lambda key: f"c:{key}"), st.sampled_from(["Ann", "Bo", ""])),
       st.sets(st.sampled_from(["Ann", "Bo"])))
def test_speaker_focus_is_a_stable_partition(keys: list[str], speaker_of: dict[str, str], named: set[str]) -> None:
    ordered = named_first(keys, speaker_of, named)
    assert sorted(ordered) == sorted(keys)  # nothing dropped, nothing added
    first = [key for key in ordered if speaker_of.get(key) in named]
    assert ordered[:len(first)] == first
    assert first == [key for key in keys if speaker_of.get(key) in named]  # each part in its list's order
    assert ordered[len(first):] == [key for key in keys if speaker_of.get(key) not in named]


# ------------------------------------------------------------------ centred cosine (SQL, both dialects)


def _unit(vector: list[float]) -> list[float]:
    length = math.sqrt(sum(x * x for x in vector))
    return [x / length for x in vector]


async def _store(memory: LongTermMemory, turns: list[tuple[str, str, list[float]]]) -> list[str]:
    """Messages (speaker, text) of one chat of Dana's with their vectors chosen by hand."""
    messages = [{"role": "user" if index % 2 == 0 else "assistant", "name": who, "content": said}
                for index, (who, said, _) in enumerate(turns)]
    appended = await ChatMemory(memory.engine).append_turn(
        ChatScope(agent="support", session="s1", user="dana", tenant="acme"), messages, model="gpt-4o")
    keys = [f"{appended.chat_id}:{appended.first_sequence + offset}" for offset in range(len(turns))]
    pending = [message_index.PendingMessage(appended.chat_id, appended.first_sequence + offset, said)
               for offset, (_, said, _) in enumerate(turns)]
    with write_transaction(memory.engine) as connection:
        message_index.store(connection, DANA, pending, MODEL, [vector for _, _, vector in turns])
    return keys


def _chatter(count: int) -> list[tuple[str, str, list[float]]]:
    # every turn mostly along one common direction (axis 0), as a small model embeds chit-chat
    return [("Ann" if i % 2 else "Bo", f"chatter {i}", _unit([1.0, 0.0, 0.15 * math.cos(i), 0.15 * math.sin(i)]))
            for i in range(count)]


async def test_centring_ranks_messages_by_what_sets_them_apart(memory: LongTermMemory) -> None:
    fact = ("Ann", "We adopted a puppy", _unit([0.6, 0.8, 0.0, 0.0]))
    keys = await _store(memory, _chatter(12) + [fact])
    query = _unit([1.0, 0.3, 0.0, 0.0])  # the question shares the common direction too
    with memory.engine.connect() as connection:
        raw = message_index.semantic(connection, DANA, MODEL, query, 13, centre=False)
        centred = message_index.semantic(connection, DANA, MODEL, query, 13, centre=True)
    assert keys[-1] not in raw[:3]  # raw cosine: the chit-chat is nearer
    assert centred[0] == keys[-1]
    matrix = numpy.array([vector for _, _, vector in _chatter(12) + [fact]], dtype=numpy.float32)
    mean = matrix.mean(axis=0)
    shifted = matrix - mean
    scores = (shifted / numpy.linalg.norm(shifted, axis=1)[:, None]) @ (numpy.array(query, dtype=numpy.float32) - mean)
    expected = [keys[int(i)] for i in numpy.argsort(-scores, kind="stable")]
    assert centred[:3] == expected[:3]  # as documented (further down, float rounding may swap near-ties)


async def test_a_scope_with_few_vectors_is_ranked_by_plain_cosine(memory: LongTermMemory) -> None:
    turns = _chatter(message_index.CENTRE_MIN_VECTORS - 2) + [("Ann", "We adopted a puppy", _unit([0.6, 0.8, 0, 0]))]
    await _store(memory, turns)
    query = _unit([1.0, 0.3, 0.0, 0.0])
    with memory.engine.connect() as connection:
        assert message_index.semantic(connection, DANA, MODEL, query, 10, centre=True) == \
            message_index.semantic(connection, DANA, MODEL, query, 10, centre=False)


async def test_a_question_naming_a_speaker_finds_what_they_said_first(memory: LongTermMemory) -> None:
    turns = [("Bo", "My neighbour's puppy barks all night", _unit([0.1, 1.0, 0.0, 0.0])),
             ("Ann", "Lunch was nice", _unit([1.0, 0.0, 0.1, 0.0])),
             ("Ann", "We adopted a puppy called Biscuit", _unit([0.3, 1.0, 0.0, 0.1]))] + _chatter(10)
    keys = await _store(memory, turns)
    embedded = Embedded(MODEL, [_unit([0.0, 1.0, 0.0, 0.0])])
    with memory.engine.connect() as connection:
        focused = memory.search_sync(connection, DANA, "What puppy did Ann get?", embedded, limit=3, kinds=(),
                                     include_messages=True)
        anyone = memory.search_sync(connection, DANA, "What puppy did they get?", embedded, limit=3, kinds=(),
                                    include_messages=True)
    assert focused[0].id == keys[2] and focused[0].text == "We adopted a puppy called Biscuit"
    assert {hit.id for hit in anyone[:2]} == {keys[0], keys[2]}  # nobody named: both puppies, as ranked


# ------------------------------------------------------------------ depth of the fused lists


def _ranked_vector(rank: int) -> list[float]:
    """A vector whose plain cosine with the axis-0 query falls as ``rank`` (1-based) grows."""
    return _unit([1.0, 0.02 * rank, 0.0, 0.0])


async def test_a_turn_both_vector_lists_rank_midway_beats_either_lists_top_alone(memory: LongTermMemory) -> None:
    # 60 turns, two context kinds. Ten turns top the full list and sit at 51–60 of the other,
    # ten the reverse; the evidence is 22nd by its full vector and 12th by its date-speaker
    # vector; the 39 others fill ranks 11–50 in opposite orders. Cut at 20, each list sees the
    # evidence alone or not at all and twenty one-list turns outscore it; 50 deep (the default),
    # two lists vouch for it and it comes first.
    from dataclasses import replace

    full_top, other_top, evidence, fillers = range(0, 10), range(10, 20), 20, list(range(21, 60))
    full_rank = {**{m: m + 1 for m in full_top}, **{m: 51 + m - 10 for m in other_top}, evidence: 22}
    date_rank = {**{m: m - 9 for m in other_top}, **{m: 51 + m for m in full_top}, evidence: 12}
    full_slots = [r for r in range(11, 51) if r != 22]
    date_slots = [r for r in range(11, 51) if r != 12]
    full_rank.update(zip(fillers, full_slots))
    date_rank.update(zip(fillers, reversed(date_slots)))
    messages = [{"role": "user" if m % 2 == 0 else "assistant", "content": f"turn {m}"} for m in range(60)]
    appended = await ChatMemory(memory.engine).append_turn(
        ChatScope(agent="support", session="s1", user="dana", tenant="acme"), messages, model="gpt-4o")
    keys = [f"{appended.chat_id}:{appended.first_sequence + m}" for m in range(60)]
    with write_transaction(memory.engine) as connection:
        for context, rank in (("full", full_rank), ("date-speaker", date_rank)):
            pending = [message_index.PendingMessage(appended.chat_id, appended.first_sequence + m, f"turn {m}", context)
                       for m in range(60)]
            message_index.store(connection, DANA, pending, MODEL, [_ranked_vector(rank[m]) for m in range(60)])
    plain = replace(memory.options, centre_vectors=False)
    assert plain.message_candidates == 50
    query = Embedded(MODEL, [[1.0, 0.0, 0.0, 0.0]])
    found = {}
    with memory.engine.connect() as connection:
        for depth in (50, 20):
            searcher = LongTermMemory(memory.engine, replace(plain, message_candidates=depth))
            found[depth] = searcher.search_sync(connection, DANA, "zzz", query, limit=10, kinds=(),
                                                include_messages=True)
    assert found[50][0].id == keys[evidence]
    assert found[50][0].ranks == {"message_semantic": 22, "message_semantic:date-speaker": 12}
    assert keys[evidence] not in {hit.id for hit in found[20]}
    assert all(len(hit.ranks) == 1 for hit in found[20])  # cut at 20, no turn is in both lists


def test_the_depth_of_the_message_lists_is_at_least_one() -> None:
    from xflow_runtime.memory.longterm import LongTermOptions
    from xflow_runtime.memory.longterm.errors import LongTermMemoryError

    assert LongTermOptions().message_candidates == 50 and LongTermOptions().candidates_per_source == 20
    with pytest.raises(LongTermMemoryError, match="message_candidates"):
        LongTermOptions(message_candidates=0)
