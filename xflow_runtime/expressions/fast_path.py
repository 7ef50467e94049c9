"""A pure-Python evaluator for the small jq subset most workflow expressions use.

libjq costs ~10-20 µs per call (JSON in, JSON out), which is most of a state's overhead. Many
expressions are tiny: ``.a.b``, ``.i < .n``, ``{i: (.i + 1), n: .n}``, ``.x == "y" and .ok``. This
module compiles such a text into Python closures once; anything outside the subset, and any case
whose exact jq behaviour is not reproduced here (errors, mixed types, big integers), raises
:class:`Unsupported` at compile time or :class:`Fallback` at run time, and the caller runs libjq.

Subset: ``.``, ``.name`` chains, ``$name`` of the declared variables, literals (numbers, plain strings, true/false/null), parentheses,
``{name: e, "name": e, name}`` objects, ``+ - * /`` on numbers, ``+`` on strings, comparisons
``== != < <= > >=`` on null/booleans/numbers/strings, ``and``/``or``/``not``, and ``|``. It is
checked against libjq by a property test (tests/interpreter/test_expression_fast_path.py).
"""

from __future__ import annotations

import copy
import re
import threading
from typing import Any, Callable, Mapping

Evaluator = Callable[[Any], Any]

_TOKEN = re.compile(
    r"\s*(?:(?P<number>\d+(?:\.\d+)?(?![\w.]))|(?P<string>\"[^\"\\]*\")|(?P<field>\.[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<variable>\$[A-Za-z_][A-Za-z0-9_]*)|(?P<op>==|!=|<=|>=|[<>+\-*/|(){}:,.]))"
)
_KEYWORDS = {"and", "or", "not", "true", "false", "null"}
_LARGEST_EXACT = 2**53
_COMPARISONS = {"==", "!=", "<", "<=", ">", ">="}


class Unsupported(Exception):
    """The text is outside the subset: use libjq."""


class Fallback(Exception):
    """This evaluation needs libjq (an error, or a case the subset does not reproduce)."""


class Isolate(Fallback):
    """This evaluation needs libjq and its cost is not bounded by the size of the data: ``-`` on
    two arrays (quadratic in libjq), ``*`` and ``/`` with a string (repetition by a number, split).
    It runs in the evaluator pool, under the evaluation budget (specs/limits.md)."""


#: The variables of the evaluation running in this thread (``$CONST``…), set by the caller around
#: a call of an evaluator compiled with ``variables`` (evaluators never call out, so no nesting).
BOUND = threading.local()


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
    return lambda data: _private(evaluator(data))


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
            left = _pipe(left, right)
        return left

    def or_(self) -> Evaluator:
        left = self.and_()
        while self.at("or"):
            self.take("or")
            left = _or(left, self.and_())
        return left

    def and_(self) -> Evaluator:
        left = self.comparison()
        while self.at("and"):
            self.take("and")
            left = _and(left, self.comparison())
        return left

    def comparison(self) -> Evaluator:
        left = self.additive()
        token = self.peek()
        if token is not None and token[0] == "op" and token[1] in _COMPARISONS:
            self.take()
            right = self.additive()
            left = _compare(token[1], left, right)
            nxt = self.peek()
            if nxt is not None and nxt[0] == "op" and nxt[1] in _COMPARISONS:
                raise Unsupported("chained comparison")  # non-associative in jq
        return left

    def additive(self) -> Evaluator:
        left = self.multiplicative()
        while self.at("+") or self.at("-"):
            operator = self.take()[1]
            left = _arithmetic(operator, left, self.multiplicative())
        return left

    def multiplicative(self) -> Evaluator:
        left = self.postfix()
        while self.at("*") or self.at("/"):
            operator = self.take()[1]
            left = _arithmetic(operator, left, self.postfix())
        return left

    def postfix(self) -> Evaluator:
        term = self.term()
        while True:
            token = self.peek()
            if token is not None and token[0] == "field":
                self.take()
                term = _pipe(term, _field(token[1][1:]))
            else:
                return term

    def term(self) -> Evaluator:
        token = self.peek()
        if token is None:
            raise Unsupported("unexpected end")
        kind, text = token
        if kind == "field":
            self.take()
            return _field(text[1:])
        if kind == "number":
            self.take()
            number = float(text) if "." in text else int(text)
            if abs(number) > _LARGEST_EXACT:
                raise Unsupported("big number literal")
            return _constant(_normal(number))
        if kind == "string":
            self.take()
            return _constant(text[1:-1])
        if kind == "variable":
            if text[1:] not in self.variables:
                raise Unsupported(text)  # $ENV, $__loc__, undeclared names: libjq
            self.take()
            return _variable(text[1:], self.variables[text[1:]])
        if kind == "name" and text == "not":  # the function: negates its input
            self.take()
            return _not
        if kind == "name" and text in ("true", "false", "null"):
            self.take()
            return _constant({"true": True, "false": False, "null": None}[text])
        if text == ".":
            self.take()
            nxt = self.peek()
            if nxt is not None and nxt[0] in ("number", "string", "name"):
                raise Unsupported("indexing form")
            return _identity
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
                value = _field(key)  # {name} is {name: .name}
            entries.append((key, value))
            if not self.at("}"):
                self.take(",")
        self.take("}")
        return _object(tuple(entries))

    def object_value(self) -> Evaluator:
        # jq allows only a restricted term here without parentheses; accept a postfix term or a
        # parenthesised expression (what `{a: (.x + 1)}` needs) and let jq handle the rest.
        token = self.peek()
        value = self.postfix()
        nxt = self.peek()
        if nxt is not None and not (nxt[0] == "op" and nxt[1] in (",", "}")):
            raise Unsupported(f"object value followed by {nxt[1]} after {token}")
        return value


# --- evaluators ------------------------------------------------------------------------------------

def _identity(data: Any) -> Any:
    return data


def _constant(value: Any) -> Evaluator:
    return lambda data: value


def _field(name: str) -> Evaluator:
    def field(data: Any) -> Any:
        if isinstance(data, dict):
            return data.get(name)
        if data is None:
            return None
        raise Fallback  # jq: "Cannot index <type> with <name>"
    return field


def _variable(name: str, unbound: Any) -> Evaluator:
    def read(data: Any) -> Any:
        value = BOUND.values.get(name, _UNBOUND)
        return copy.deepcopy(unbound) if value is _UNBOUND else value
    return read


_UNBOUND = object()


def _pipe(left: Evaluator, right: Evaluator) -> Evaluator:
    return lambda data: right(left(data))


def _truthy(value: Any) -> bool:
    return value is not None and value is not False


def _or(left: Evaluator, right: Evaluator) -> Evaluator:
    return lambda data: True if _truthy(left(data)) else _truthy(right(data))


def _and(left: Evaluator, right: Evaluator) -> Evaluator:
    return lambda data: _truthy(right(data)) if _truthy(left(data)) else False


def _not(data: Any) -> bool:
    return not _truthy(data)


def _object(entries: tuple[tuple[str, Evaluator], ...]) -> Evaluator:
    def build(data: Any) -> dict[str, Any]:
        return {key: _private(value(data)) for key, value in entries}
    build.builds_fresh = True  # type: ignore[attr-defined]
    return build


def _private(value: Any) -> Any:
    """A fresh copy, as jq would hand out, so no shared subtree leaks to callers that mutate.

    Values jq would not reproduce exactly (integers beyond 2**53, which it may round; non-finite
    floats; anything that is not JSON) make the evaluation fall back to libjq."""
    if isinstance(value, str) or value is None or isinstance(value, bool):
        return value
    if isinstance(value, dict):
        copied = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise Fallback
            copied[key] = _private(item)
        return copied
    if isinstance(value, list):
        return [_private(item) for item in value]
    if isinstance(value, int):
        if abs(value) > _LARGEST_EXACT:
            raise Fallback
        return value
    if isinstance(value, float) and value == value and value not in (float("inf"), float("-inf")):
        return _normal(value)  # jq prints 2.0 as 2
    raise Fallback


def _number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Fallback
    if isinstance(value, int) and abs(value) > _LARGEST_EXACT:
        raise Fallback  # jq computes in doubles
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        raise Fallback
    return value


def _normal(number: int | float) -> int | float:
    """How the jq binding returns a number: integral values as ``int``. Huge integral values are
    printed by jq in ways this module does not reproduce, so they go to libjq."""
    if isinstance(number, float) and number.is_integer():
        if abs(number) > _LARGEST_EXACT:
            raise Fallback
        return int(number)
    return number


def _arithmetic(operator: str, left: Evaluator, right: Evaluator) -> Evaluator:
    def apply(data: Any) -> Any:
        a, b = left(data), right(data)
        if operator == "+":
            if isinstance(a, str) and isinstance(b, str):
                return a + b
            if a is None:
                return _arith_value(b)
            if b is None:
                return _arith_value(a)
        if operator != "+" and (isinstance(a, (str, list)) or isinstance(b, (str, list))):
            raise Isolate
        x, y = _number(a), _number(b)
        if operator == "+":
            result: int | float = x + y
        elif operator == "-":
            result = x - y
        elif operator == "*":
            result = x * y
        else:
            if y == 0:
                raise Fallback  # jq: cannot be divided because the divisor is zero
            result = x / y
        if isinstance(result, int) and abs(result) > _LARGEST_EXACT:
            raise Fallback
        return _normal(result)
    return apply


def _arith_value(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    return _normal(_number(value))


_RANK = {type(None): 0, bool: 1, int: 3, float: 3, str: 4}


def _rank(value: Any) -> int:
    if value is True:
        return 2
    rank = _RANK.get(type(value))
    if rank is None:
        raise Fallback  # arrays and objects: leave their ordering to jq
    return rank


def _compare(operator: str, left: Evaluator, right: Evaluator) -> Evaluator:
    def compare(data: Any) -> bool:
        a, b = left(data), right(data)
        rank_a, rank_b = _rank(a), _rank(b)
        if rank_a == 3:
            a = _number(a)
        if rank_b == 3:
            b = _number(b)
        if rank_a != rank_b or rank_a < 3:
            order = (rank_a > rank_b) - (rank_a < rank_b)
        else:
            order = (a > b) - (a < b)
        if operator == "==":
            return order == 0
        if operator == "!=":
            return order != 0
        if operator == "<":
            return order < 0
        if operator == "<=":
            return order <= 0
        if operator == ">":
            return order > 0
        return order >= 0
    return compare
