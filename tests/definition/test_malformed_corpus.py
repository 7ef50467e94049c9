"""Malformed documents: every one gives positioned diagnostics, a DefinitionError, never a traceback.

Three sources: hand-written files in ``malformed/`` (expected code and position in a leading
``# expect:`` comment, or in ``malformed/EXPECT`` for files that cannot hold one), mutations of
the valid base document listed here, and generated mutations (hypothesis).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from xflow_runtime.definition import check_workflow, load_workflow
from xflow_runtime.definition.compat import RELAXATION_CODES
from xflow_runtime.errors import DefinitionError

from tests.definition.helpers import BASE

MALFORMED = Path(__file__).parent / "malformed"
_POSITIONLESS = {"XF006", "XF007"}  # the file as a whole is the problem


def _expectations() -> list[tuple[str, str, tuple[int, int]]]:
    found: list[tuple[str, str, tuple[int, int]]] = []
    for line in (MALFORMED / "EXPECT").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, code, position = line.split()
            found.append((name, code, tuple(int(p) for p in position.split(":"))))  # type: ignore[misc]
    listed = {name for name, _, _ in found}
    for path in sorted(MALFORMED.glob("*.yaml")):
        if path.name in listed:
            continue
        match = re.match(r"# expect: (XF\d{3}) (\d+):(\d+)", path.read_text(errors="replace"))
        assert match, f"{path.name} has no '# expect:' line"
        found.append((path.name, match.group(1), (int(match.group(2)), int(match.group(3)))))
    return found


CORPUS = _expectations()


def test_corpus_is_complete() -> None:
    assert len(CORPUS) == len([p for p in MALFORMED.iterdir() if p.name != "EXPECT"])


@pytest.mark.parametrize("name,code,position", CORPUS, ids=[c[0] for c in CORPUS])
def test_hand_written_malformed_document(name: str, code: str, position: tuple[int, int]) -> None:
    strict = code in RELAXATION_CODES  # SonataFlow's relaxations are errors only in strict mode
    diagnostics = check_workflow(MALFORMED / name, source_name=name, strict=strict).diagnostics
    assert any(d.code == code and (d.line, d.column) == position for d in diagnostics), \
        [str(d) for d in diagnostics]
    _assert_well_formed(diagnostics, name)
    with pytest.raises(DefinitionError):
        load_workflow(MALFORMED / name, strict=strict)


#: (description, old text, new text, expected code) — mutations of the valid base document.
MUTATIONS: list[tuple[str, str, str, str]] = [
    ("spec version missing", 'specVersion: "0.8"\n', "", "XF140"),
    ("spec version number", 'specVersion: "0.8"', "specVersion: 0.8", "XF053"),
    ("id empty", "id: base", 'id: ""', "XF050"),
    ("states scalar", "states:\n", "states: 3\nold:\n", "XF053"),
    ("start number", "start: Greet", "start: 1", "XF053"),
    ("start unknown", "start: Greet", "start: Gret", "XF103"),
    ("functions scalar", "functions:\n  - name: greet", "functions: 5\nx:\n  - name: greet", "XF053"),
    ("function name missing", "  - name: greet\n", "  - nam: greet\n", "XF052"),
    ("function type enum", "type: custom", "type: customm", "XF054"),
    ("function unknown key", "    type: custom\n", "    type: custom\n    timeout: 5\n", "XF051"),
    ("event kind enum", "kind: produced", "kind: emitted", "XF054"),
    ("event without type", "    type: ping\n", "", "XF052"),
    ("error code number", 'code: "500"', "code: [500]", "XF053"),
    ("retries scalar list", "retries:\n  - name: Twice\n    maxAttempts: 2\n", "retries: [1]\n", "XF053"),
    ("retry max zero", "maxAttempts: 2", "maxAttempts: 0", "XF050"),
    ("state name number", "  - name: Greet\n", "  - name: 12\n", "XF053"),
    ("state type enum", "type: operation", "type: operations", "XF055"),
    ("state type missing", "    type: operation\n", "", "XF052"),
    ("actions missing", "    actions:\n", "    actionz:\n", "XF051"),
    ("action empty", "      - functionRef:\n          refName: greet\n", "      - junk:\n          refName: greet\n",
     "XF051"),
    ("function ref unknown", "refName: greet", "refName: nobody", "XF104"),
    ("function ref number", "refName: greet", "refName: 3", "XF053"),
    ("arguments list", "          arguments:\n            who:", "          arguments:\n            - who:", "XF053"),
    ("argument expression bad", '"${ .name }"', '"${ .name[ }"', "XF121"),
    ("retry ref unknown", "retryRef: Twice", "retryRef: Once", "XF107"),
    ("action data filter key", "toStateData: .greeting", "toState: .greeting", "XF051"),
    ("toStateData computed", "toStateData: .greeting", "toStateData: '[.greeting]'", "XF122"),
    ("toStateData syntax", "toStateData: .greeting", "toStateData: '.greeting['", "XF121"),
    ("onErrors not list", "    onErrors:\n      - errorRef", "    onErrors:\n        errorRef", "XF053"),
    ("errorRef unknown", "errorRef: Boom", "errorRef: Bam", "XF108"),
    ("error transition unknown", "      - errorRef: Boom\n        transition: Done",
     "      - errorRef: Boom\n        transition: Dune", "XF101"),
    ("transition unknown", "transition: Decide", "transition: Decides", "XF101"),
    ("transition number", "transition: Decide", "transition: 4", "XF053"),
    ("transition and end", "    transition: Decide\n", "    transition: Decide\n    end: true\n", "XF054"),
    ("no exit", "    transition: Decide\n", "", "XF052"),
    ("switch default missing", "    defaultCondition:\n      end: true\n", "", "XF141"),
    ("switch condition bad", "condition: .greeting != null", "condition: .greeting !=! null", "XF121"),
    ("switch condition number", "condition: .greeting != null", "condition: 5", "XF053"),
    ("switch condition target", "        transition: Done\n    defaultCondition",
     "        transition: Don\n    defaultCondition", "XF101"),
    ("switch self loop", "    defaultCondition:\n      end: true\n", "    defaultCondition:\n      transition: Decide\n",
     "XF118"),
    ("switch end on state", "    type: switch\n", "    type: switch\n    end: true\n", "XF051"),
    ("inject data list", "    data:\n      ok: true\n", "    data:\n      - ok\n", "XF053"),
    ("produce unknown event", "eventRef: Pong", "eventRef: Pongg", "XF105"),
    ("produce consumed event", "eventRef: Pong", "eventRef: Ping", "XF143"),
    ("produce data syntax", "data: .greeting\n", "data: '.greeting ||'\n", "XF121"),
    ("produce events scalar", "      produceEvents:\n        - eventRef: Pong\n          data: .greeting\n",
     "      produceEvents: Pong\n", "XF053"),
    ("end terminate string", "    end:\n      produceEvents:", "    end:\n      terminate: yes please\n"
     "      produceEvents:", "XF053"),
    ("expression fn syntax", "operation: .count + 1", "operation: .count +* 1", "XF121"),
    ("duplicate function", "  - name: inc\n", "  - name: greet\n", "XF115"),
    ("duplicate event", "  - name: Pong\n    type: pong\n    kind: produced\n",
     "  - name: Pong\n    type: pong\n    kind: produced\n  - name: Pong\n    type: pong2\n    kind: produced\n",
     "XF115"),
    ("duplicate state", "  - name: Done\n", "  - name: Decide\n", "XF102"),
    ("duplicate key", "    type: inject\n", "    type: inject\n    type: sleep\n", "XF003"),
    ("tab", "    type: inject\n", "\ttype: inject\n", "XF004"),
    ("unclosed flow", "    data:\n      ok: true\n", "    data: {ok: true\n", "XF001"),
    ("bad anchor", "    data:\n      ok: true\n", "    data: *nothing\n", "XF001"),
    ("stray colon", "id: base\n", "id: base: again\n", "XF001"),
    ("metadata non string", "id: base\n", "id: base\nmetadata:\n  a: [1]\n", "XF053"),
    ("keepActive string", "id: base\n", "id: base\nkeepActive: sure\n", "XF053"),
    ("version expression bad", "id: base\n", "id: base\nversion: '${ . | }'\n", "XF121"),
    ("constants list", "id: base\n", "id: base\nconstants: [1, 2]\n", "XF053"),
    ("secrets object", "id: base\n", "id: base\nsecrets: {a: b}\n", "XF053"),
    ("timeouts bad", "id: base\n", "id: base\ntimeouts: 5\n", "XF053"),
    ("runBefore unknown", "id: base\n", "id: base\ntimeouts:\n  workflowExecTimeout:\n    duration: PT1M\n"
     "    runBefore: Nothing\n", "XF114"),
    ("compensatedBy unknown", "    transition: Decide\n", "    transition: Decide\n    compensatedBy: Undo\n", "XF109"),
    ("compensatedBy unmarked", "    transition: Decide\n", "    transition: Decide\n    compensatedBy: Done\n",
     "XF110"),
    ("undeclared secret warning plus error", '"${ .name }"', '"${ $SECRETS.X | }"', "XF121"),
]


@pytest.mark.parametrize("description,old,new,code", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_mutation_of_the_base_document(description: str, old: str, new: str, code: str) -> None:
    assert old in BASE, f"mutation {description!r} does not apply"
    text = BASE.replace(old, new, 1)
    strict = code in RELAXATION_CODES  # SonataFlow's relaxations are errors only in strict mode
    diagnostics = check_workflow(text, source_name="wf.yaml", strict=strict).diagnostics
    assert code in [d.code for d in diagnostics], [str(d) for d in diagnostics]
    _assert_well_formed(diagnostics, "wf.yaml")
    with pytest.raises(DefinitionError):
        load_workflow(text, strict=strict)


def test_corpus_size() -> None:
    assert len(CORPUS) + len(MUTATIONS) >= 100


def _assert_well_formed(diagnostics: list, name: str) -> None:
    errors = [d for d in diagnostics if d.severity == "error"]
    assert errors
    for d in diagnostics:
        assert d.file.endswith(name) or d.file != "", d
        assert d.code.startswith("XF") and d.message
        assert d.code != "XF199", str(d)  # an internal error is a bug in a lint rule
        if d.code not in _POSITIONLESS:
            assert d.line >= 1 and d.column >= 1, str(d)
        assert "Traceback" not in d.message
