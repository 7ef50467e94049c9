"""The chat's live reply text: whatever way the model's JSON is cut into pieces, the decoded
``response`` equals the final one (pins specs/agent.md, "Streaming replies")."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from xflow_runtime.agent.reply_stream import ResponseText


@given(text=st.text(), cuts=st.lists(st.integers(0, 400), max_size=12), ascii_only=st.booleans(),
       extra=st.booleans())
def test_any_split_of_the_json_decodes_to_the_response(text: str, cuts: list[int], ascii_only: bool,
                                                        extra: bool) -> None:
    value = {"response": text, "done": True} if extra else {"response": text}
    raw = json.dumps(value, ensure_ascii=ascii_only)
    points = sorted({min(c, len(raw)) for c in cuts})
    pieces = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)])]
    stream = ResponseText()
    assert "".join(stream.feed(piece) for piece in pieces) == text


def test_plain_text_passes_through_and_other_keys_are_skipped() -> None:
    plain = ResponseText()
    assert plain.feed("Hello") + plain.feed(" there") == "Hello there"
    skipping = ResponseText()
    assert skipping.feed('{"done": false, "resp') + skipping.feed('onse": "ok"}') == "ok"
