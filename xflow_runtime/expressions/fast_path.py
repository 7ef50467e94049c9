"""A pure-Python evaluator for the small jq subset most workflow expressions use.

libjq costs ~10-20 µs per call (JSON in, JSON out), which is most of a state's overhead. Many
expressions are tiny: ``.a.b``, ``.i < .n``, ``{i: (.i + 1), n: .n}``, ``.x == "y" and .ok``. This
module compiles such a text into Python closures once; anything outside the subset, and any case
whose exact jq behaviour is not reproduced here (errors, mixed types, big integers), raises
:class:`Unsupported` at compile time or :class:`Fallback` at run time, and the caller runs libjq.

Subset: ``.``, ``.name`` chains, ``$name`` of the declared variables, literals (numbers, plain strings, true/false/null), parentheses,
``{name: e, "name": e, name}`` objects, ``+ - * /`` on numbers, ``+`` on strings, comparisons
``== != < <= > >=`` on null/booleans/numbers/strings, ``and``/``or``/``not``, ``floor``/``ceil``/``round``
on numbers, and ``|``. It is
checked against libjq by a property test (tests/interpreter/test_expression_fast_path.py).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from xflow_runtime.expressions import fast_eval as ev
from xflow_runtime.expressions.fast_eval import BOUND, Evaluator, Fallback, Isolate

__all__ = ["BOUND", "Evaluator", "Fallback", "Isolate", "Unsupported", "compile_fast"]

_TOKEN = re.compile(
    r"\s*(?:(?P<number>\d+(?:\.\d+)?(?![\w.]))|(?P<string>\"[^\"\\]*\")|(?P<field>\.[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<variable>\$[A-Za-z_][A-Za-z0-9_]*)|(?P<op>==|!=|<=|>=|[<>+\-*/|(){}:,.]))"
)
_KEYWORDS = {"and", "or", "not", "true", "false", "null"}
_COMPARISONS = {"==", "!=", "<", "<=", ">", ">="}


class Unsupported(Exception):
    """The text is outside the subset: use libjq."""


def compile_fast(body: str, variables: Mapping[str, Any] | None = None) -> Evaluator | None:
    """An evaluator for ``body``, or ``None`` when libjq must handle it. ``variables`` maps each
    ``$name`` the text may use to its value when the evaluation does not bind it; the values
    themselves are read from :data:`BOUND` at run time."""
    if "#" in body:
        return None
    try:
        tokens = _tokenize(body)
        parser = _Parser(tokens, variables or {})
        evaluator = parser.pipe()
        if parser.position != len(tokens):
            return None
    except Unsupported:
        return None
    if getattr(evaluator, "builds_fresh", False):
        return evaluator
    private = ev.private  # bound once: this closure runs on every evaluation
    return lambda data: private(evaluator(data))


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    text = text.strip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise Unsupported(text[position:])
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        position = match.end()
        while position < len(text) and text[position].isspace():
            position += 1
    return tokens


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], variables: Mapping[str, Any]):
        self.tokens = tokens
        self.variables = variables
        self.position = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token is None or (value is not None and token[1] != value):
            raise Unsupported(f"expected {value}")
        self.position += 1
        return token

    def at(self, value: str) -> bool:
        token = self.peek()
        return token is not None and token[1] == value and token[0] in ("op", "name")

    # pipe < or < and < comparison < additive < multiplicative < postfix
    def pipe(self) -> Evaluator:
        left = self.or_()
        while self.at("|"):
            self.take("|")
            right = self.or_()
            left = ev.pipe(left, right)
        return left

    def or_(self) -> Evaluator:
        left = self.and_()
        while self.at("or"):
            self.take("or")
            left = ev.or_(left, self.and_())
        return left

    def and_(self) -> Evaluator:
        left = self.comparison()
        while self.at("and"):
            self.take("and")
            left = ev.and_(left, self.comparison())
        return left

    def comparison(self) -> Evaluator:
        left = self.additive()
        token = self.peek()
        if token is not None and token[0] == "op" and token[1] in _COMPARISONS:
            self.take()
            right = self.additive()
            left = ev.compare(token[1], left, right)
            nxt = self.peek()
            if nxt is not None and nxt[0] == "op" and nxt[1] in _COMPARISONS:
                raise Unsupported("chained comparison")  # non-associative in jq
        return left

    def additive(self) -> Evaluator:
        left = self.multiplicative()
        while self.at("+") or self.at("-"):
            operator = self.take()[1]
            left = ev.arithmetic(operator, left, self.multiplicative())
        return left

    def multiplicative(self) -> Evaluator:
        left = self.postfix()
        while self.at("*") or self.at("/"):
            operator = self.take()[1]
            left = ev.arithmetic(operator, left, self.postfix())
        return left

    def postfix(self) -> Evaluator:
        term = self.term()
        while True:
            token = self.peek()
            if token is not None and token[0] == "field":
                self.take()
                term = ev.pipe(term, ev.field(token[1][1:]))
            else:
                return term

    def term(self) -> Evaluator:
        token = self.peek()
        if token is None:
            raise Unsupported("unexpected end")
        kind, text = token
        if kind == "field":
            self.take()
            return ev.field(text[1:])
        if kind == "number":
            self.take()
            number = float(text) if "." in text else int(text)
            if abs(number) > ev.LARGEST_EXACT:
                raise Unsupported("big number literal")
            return ev.constant(ev.normal(number))
        if kind == "string":
            self.take()
            return ev.constant(text[1:-1])
        if kind == "variable":
            if text[1:] not in self.variables:
                raise Unsupported(text)  # $ENV, $__loc__, undeclared names: libjq
            self.take()
            return ev.variable(text[1:], self.variables[text[1:]])
        if kind == "name" and text == "not":  # the function: negates its input
            self.take()
            return ev.not_
        if kind == "name" and text in ev.ROUNDING:  # floor, ceil, round: linear, exact on doubles
            self.take()
            return ev.ROUNDING[text]
        if kind == "name" and text in ("true", "false", "null"):
            self.take()
            return ev.constant({"true": True, "false": False, "null": None}[text])
        if text == ".":
            self.take()
            nxt = self.peek()
            if nxt is not None and nxt[0] in ("number", "string", "name"):
                raise Unsupported("indexing form")
            return ev.identity
        if text == "(":
            self.take("(")
            inner = self.pipe()
            self.take(")")
            return inner
        if text == "{":
            return self.object_()
        raise Unsupported(text)

    def object_(self) -> Evaluator:
        self.take("{")
        entries: list[tuple[str, Evaluator]] = []
        while not self.at("}"):
            kind, text = self.take()
            if kind == "name" and text not in _KEYWORDS:
                key = text
            elif kind == "string":
                key = text[1:-1]
            else:
                raise Unsupported("object key")
            if self.at(":"):
                self.take(":")
                value = self.object_value()
            else:
                value = ev.field(key)  # {name} is {name: .name}
            entries.append((key, value))
            if not self.at("}"):
                self.take(",")
        self.take("}")
        return ev.object_of(tuple(entries))

    def object_value(self) -> Evaluator:
        # jq allows only a restricted term here without parentheses; accept a postfix term or a
        # parenthesised expression (what `{a: (.x + 1)}` needs) and let jq handle the rest.
        token = self.peek()
        value = self.postfix()
        nxt = self.peek()
        if nxt is not None and not (nxt[0] == "op" and nxt[1] in (",", "}")):
            raise Unsupported(f"object value followed by {nxt[1]} after {token}")
        return value
