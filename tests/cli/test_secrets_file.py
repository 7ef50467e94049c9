"""``--secrets-file``: a ``.env`` file means what python-dotenv says it means (property test on
generated files), JSON/YAML objects still work, and bad lines are refused without being echoed."""

from __future__ import annotations

import io

import pytest
from dotenv import dotenv_values
from dotenv.parser import parse_stream
from hypothesis import given, settings, strategies as st

from xflow_runtime.cli.secrets_file import SecretsFileError, parse_dotenv, read_secrets_file

keys = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True)
# values without the characters that make a line something other than NAME=VALUE
plain = st.text(st.characters(codec="utf-8", exclude_characters="\n\r\\'\"#$= \t\x00"), max_size=12)
double_quoted_body = st.lists(st.one_of(plain, st.sampled_from(['\\n', '\\"', '\\\\', '\\t', ' ', "#", "'"])),
                              max_size=5).map("".join)
single_quoted_body = st.text(st.characters(codec="utf-8", exclude_characters="\n\r'\\\x00"), max_size=12)


@st.composite
def lines(draw):
    key = draw(keys)
    prefix = draw(st.sampled_from(["", "export ", "  "]))
    kind = draw(st.sampled_from(["plain", "double", "single", "empty", "empty-quoted"]))
    value = {"plain": plain.map(str.strip), "double": double_quoted_body.map(lambda v: f'"{v}"'),
             "single": single_quoted_body.map(lambda v: f"'{v}'"), "empty": st.just(""),
             "empty-quoted": st.sampled_from(['""', "''"])}[kind]
    comment = draw(st.sampled_from(["", "  # a comment", " #c"]))
    if kind in ("plain", "empty") and comment and not draw(value):
        comment = ""
    return f"{prefix}{key}={draw(value)}{comment}"


files = st.lists(st.one_of(lines(), st.sampled_from(["", "# only a comment", "   "])), max_size=8).map("\n".join)


@settings(max_examples=300)
@given(files)
def test_a_secrets_file_reads_exactly_as_python_dotenv_reads_it(text):
    """Same values as dotenv_values; what dotenv itself cannot parse (it would warn and skip,
    e.g. ``A="\\"`` whose ``\"`` dotenv takes for an escaped quote) is refused instead."""
    if any(binding.error for binding in parse_stream(io.StringIO(text))):
        with pytest.raises(SecretsFileError):
            parse_dotenv(text, "s.env")
    else:
        assert parse_dotenv(text, "s.env") == dict(dotenv_values(stream=io.StringIO(text)))


@pytest.mark.parametrize("text, expected", [
    ('TOKEN="quoted value"\n', {"TOKEN": "quoted value"}),
    ("export TOKEN=abc\n", {"TOKEN": "abc"}),
    ("TOKEN=abc # not part of it\n", {"TOKEN": "abc"}),
    ("TOKEN='single # kept'\n", {"TOKEN": "single # kept"}),
    ('TOKEN="line\\nbreak"\n', {"TOKEN": "line\nbreak"}),
    ("EMPTY=\nTOKEN=\"\"\n", {"EMPTY": "", "TOKEN": ""}),
    ("A=1\nB=${A}2\n", {"A": "1", "B": "12"}),
])
def test_the_edges_that_used_to_be_read_wrong(tmp_path, text, expected):
    path = tmp_path / "secrets.env"
    path.write_text(text)
    assert read_secrets_file(str(path)) == expected


@pytest.mark.parametrize("text, expected", [
    ("token: from-yaml\n", {"token": "from-yaml"}),
    ('{"token": "from-json", "n": 1}', {"token": "from-json", "n": 1}),
    ("URL=http://x:1/a\n", {"URL": "http://x:1/a"}),  # a ':' after '=' is still a .env line
])
def test_json_and_yaml_objects_are_still_read(tmp_path, text, expected):
    path = tmp_path / "secrets"
    path.write_text(text)
    assert read_secrets_file(str(path)) == expected


@pytest.mark.parametrize("text, line", [("OK=1\nhunter2 is not a line\n", 2), ("OK=1\nNAKED_KEY\n", 2)])
def test_lines_that_are_not_assignments_are_refused_without_echo(tmp_path, text, line):
    path = tmp_path / "bad.env"
    path.write_text(text)
    with pytest.raises(SecretsFileError) as caught:
        read_secrets_file(str(path))
    assert f"bad.env:{line}" in str(caught.value) and "hunter2" not in str(caught.value)
