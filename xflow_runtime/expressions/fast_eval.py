"""The evaluators of the jq subset (:mod:`xflow_runtime.expressions.fast_path` compiles a text
into these closures). Each reproduces jq exactly on the values it accepts and raises
:class:`Fallback` (libjq handles it) or :class:`Isolate` (libjq in the evaluator pool) otherwise.
"""

from __future__ import annotations

import copy
import math
import threading
from typing import Any, Callable

Evaluator = Callable[[Any], Any]

#: Beyond this, jq's doubles and Python's integers disagree.
LARGEST_EXACT = 2**53


class Fallback(Exception):
    """This evaluation needs libjq (an error, or a case the subset does not reproduce)."""


class Isolate(Fallback):
    """This evaluation needs libjq and its cost is not bounded by the size of the data: ``-`` on
    two arrays (quadratic in libjq), ``*`` and ``/`` with a string (repetition by a number, split).
    It runs in the evaluator pool, under the evaluation budget (specs/limits.md)."""


#: The variables of the evaluation running in this thread (``$CONST``…), set by the caller around
#: a call of an evaluator compiled with ``variables`` (evaluators never call out, so no nesting).
BOUND = threading.local()


def identity(data: Any) -> Any:
    return data


def constant(value: Any) -> Evaluator:
    return lambda data: value


def field(name: str) -> Evaluator:
    def read(data: Any) -> Any:
        if isinstance(data, dict):
            return data.get(name)
        if data is None:
            return None
        raise Fallback  # jq: "Cannot index <type> with <name>"
    return read


def variable(name: str, unbound: Any) -> Evaluator:
    def read(data: Any) -> Any:
        value = BOUND.values.get(name, _UNBOUND)
        return copy.deepcopy(unbound) if value is _UNBOUND else value
    return read


_UNBOUND = object()


def pipe(left: Evaluator, right: Evaluator) -> Evaluator:
    return lambda data: right(left(data))


def _truthy(value: Any) -> bool:
    return value is not None and value is not False


def or_(left: Evaluator, right: Evaluator) -> Evaluator:
    return lambda data: True if _truthy(left(data)) else _truthy(right(data))


def and_(left: Evaluator, right: Evaluator) -> Evaluator:
    return lambda data: _truthy(right(data)) if _truthy(left(data)) else False


def not_(data: Any) -> bool:
    return not _truthy(data)


def rounding(name: str) -> Evaluator:
    """jq's ``floor``, ``ceil`` and ``round`` (C's ``round``: halves away from zero) on a number;
    anything else (an error in jq) and results beyond 2**53 go to libjq."""
    def apply(data: Any) -> int:
        x = _number(data)
        if isinstance(x, int):
            return x
        if name == "floor":
            result = math.floor(x)
        elif name == "ceil":
            result = math.ceil(x)
        else:  # |x| - floor(|x|) is exact in doubles, so the half is compared exactly
            whole = math.floor(abs(x))
            result = whole + 1 if abs(x) - whole >= 0.5 else whole
            result = result if x >= 0 else -result
        if abs(result) > LARGEST_EXACT:
            raise Fallback
        return result
    return apply


ROUNDING = {name: rounding(name) for name in ("floor", "ceil", "round")}


def object_of(entries: tuple[tuple[str, Evaluator], ...]) -> Evaluator:
    def build(data: Any) -> dict[str, Any]:
        return {key: private(value(data)) for key, value in entries}
    build.builds_fresh = True  # type: ignore[attr-defined]
    return build


def private(value: Any) -> Any:
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
            copied[key] = private(item)
        return copied
    if isinstance(value, list):
        return [private(item) for item in value]
    if isinstance(value, int):
        if abs(value) > LARGEST_EXACT:
            raise Fallback
        return value
    if isinstance(value, float) and value == value and value not in (float("inf"), float("-inf")):
        return normal(value)  # jq prints 2.0 as 2
    raise Fallback


def _number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Fallback
    if isinstance(value, int) and abs(value) > LARGEST_EXACT:
        raise Fallback  # jq computes in doubles
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        raise Fallback
    return value


def normal(number: int | float) -> int | float:
    """How the jq binding returns a number: integral values as ``int``. Huge integral values are
    printed by jq in ways this module does not reproduce, so they go to libjq."""
    if isinstance(number, float) and number.is_integer():
        if abs(number) > LARGEST_EXACT:
            raise Fallback
        return int(number)
    return number


def arithmetic(operator: str, left: Evaluator, right: Evaluator) -> Evaluator:
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
        if isinstance(result, int) and abs(result) > LARGEST_EXACT:
            raise Fallback
        return normal(result)
    return apply


def _arith_value(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    return normal(_number(value))


_RANK = {type(None): 0, bool: 1, int: 3, float: 3, str: 4}


def _rank(value: Any) -> int:
    if value is True:
        return 2
    rank = _RANK.get(type(value))
    if rank is None:
        raise Fallback  # arrays and objects: leave their ordering to jq
    return rank


def compare(operator: str, left: Evaluator, right: Evaluator) -> Evaluator:
    def holds(data: Any) -> bool:
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
    return holds
