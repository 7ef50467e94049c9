from hypothesis import given, strategies as st

from xflow_runtime.functions.context import REDACTED, SecretRedactor

secret_text = st.text(st.characters(blacklist_characters="*", blacklist_categories=("Cs",)), min_size=4, max_size=12)


@given(st.dictionaries(st.text(min_size=1, max_size=5), secret_text | st.lists(secret_text, max_size=2), max_size=5),
       st.lists(st.text(max_size=8), max_size=6), st.data())
def test_no_secret_survives_redaction(secrets, fillers, data):
    values = [v for value in secrets.values() for v in (value if isinstance(value, list) else [value])]
    pieces = []
    for filler in fillers:
        pieces.append(filler)
        if values:
            pieces.append(data.draw(st.sampled_from(values)))
    text = "".join(pieces)
    redacted = SecretRedactor(secrets).redact(text)
    for value in values:
        assert value not in redacted
    if any(value in text for value in values):
        assert REDACTED in redacted


def test_short_values_are_not_redacted_and_nested_values_are():
    redactor = SecretRedactor({"PIN": "123", "db": {"password": "hunter22"}, "keys": ["k-abcdef"]})
    assert redactor.redact("pin 123, pw hunter22, key k-abcdef") == "pin 123, pw ***, key ***"
