"""JSONPath expressions (``expressionLang: jsonpath``), compiled once, with SonataFlow's semantics.

SonataFlow evaluates JSONPath with Jayway JsonPath; we parse with ``jsonpath-ng`` (its extended
grammar: filters, arithmetic) and keep the Jayway behaviours the SonataFlow examples rely on:

* ``$.[?(…)]`` and ``x.[?(…)]`` mean ``$[?(…)]`` / ``x[?(…)]``;
* a filter applied to an **object** tests the object itself (``$[?(@.language == 'English')]``
  on ``{"language": "English"}`` selects the root), where RFC 9535 would test its member values;
* a *definite* path (names and indexes only) gives its value (``null`` when absent); an
  *indefinite* one (filters, wildcards, slices, ``..``) gives the list of what it selected;
* a condition holds when the result is ``true`` or a non-empty list (a filter that matched).

``${ … }`` and ``{{ … }}`` wrap an expression; ``$CONST.x``, ``$SECRETS.x`` and ``$WORKFLOW.x``
(and any declared extra variable, e.g. a foreach ``iterationParam``) start from that variable
instead of the data. The object has the interface of :class:`~.jq_expressions.JqExpression`.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from xflow_runtime.errors import ExpressionError, ExpressionSyntaxError
from xflow_runtime.expressions.jq_expressions import STANDARD_VARIABLES

_WRAPPED = re.compile(r"^\s*(?:\$\{(?P<dollar>.*)\}|\{\{(?P<braces>.*)\}\})\s*$", re.DOTALL)
_DOT_BRACKET = re.compile(r"\.\[")
_VARIABLE = re.compile(r"^\$(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<rest>.*)$", re.DOTALL)


def is_jsonpath_expression(value: Any) -> bool:
    """A literal-unless-marked string that is an expression: ``${ … }``, ``{{ … }}`` or a bare
    ``$…`` JSONPath that parses (SonataFlow evaluates those; ``"$.a $.b"`` stays text)."""
    if not isinstance(value, str):
        return False
    if _WRAPPED.match(value):
        return True
    if not value.strip().startswith("$"):
        return False
    try:
        compile_jsonpath(value)
    except ExpressionError:
        return False
    return True


def strip_jsonpath(text: str) -> str:
    match = _WRAPPED.match(text)
    if match is None:
        return text.strip()
    return (match.group("dollar") if match.group("dollar") is not None else match.group("braces")).strip()


@dataclass(frozen=True)
class JsonPathExpression:
    """A compiled JSONPath. Immutable and shareable between threads and instances."""

    text: str
    variables: tuple[str, ...]
    _path: Any = field(repr=False, compare=False)
    #: The variable the path starts from (``None``: the data).
    _root: str | None = field(default=None, repr=False, compare=False)
    _definite: bool = field(default=True, repr=False, compare=False)
    #: For a definite path made of names and indexes, its steps (for ``toStateData``).
    _steps: tuple[str | int, ...] | None = field(default=None, repr=False, compare=False)

    def evaluate_all(self, data: Any, variables: Mapping[str, Any] | None = None) -> list[Any]:
        return [match.value for match in self._find(data, variables)]

    def evaluate(self, data: Any, variables: Mapping[str, Any] | None = None) -> Any:
        if self._steps is not None:  # names and indexes: walked directly, ~50x faster than the tree
            return _walk(data if self._root is None else (variables or {}).get(self._root), self._steps)
        values = self.evaluate_all(data, variables)
        if not self._definite:
            return values
        return values[0] if values else None

    def evaluate_condition(self, data: Any, variables: Mapping[str, Any] | None = None) -> bool:
        result = self.evaluate(data, variables)
        return result is True or (isinstance(result, list) and bool(result))

    def path(self, data: Any, variables: Mapping[str, Any] | None = None) -> list[str | int]:
        if self._steps is None or self._root is not None:
            raise ExpressionError("JSONPath expression does not name a location (use names and indexes, "
                                  "e.g. $.result or $.items[0])", expression=self.text)
        return list(self._steps)

    # The awaitable forms of the compiled-expression interface (specs/limits.md): a JSONPath walks
    # each node of the data at most once per step, so it is bounded by the data's size and stays
    # in-process, like the jq fast path.
    async def evaluate_async(self, data: Any, variables: Mapping[str, Any] | None = None) -> Any:
        return self.evaluate(data, variables)

    def evaluate_now(self, data: Any, variables: Mapping[str, Any] | None = None) -> Any:
        return self.evaluate(data, variables)

    def condition_now(self, data: Any, variables: Mapping[str, Any] | None = None) -> bool:
        return self.evaluate_condition(data, variables)

    async def evaluate_condition_async(self, data: Any, variables: Mapping[str, Any] | None = None) -> bool:
        return self.evaluate_condition(data, variables)

    async def path_async(self, data: Any, variables: Mapping[str, Any] | None = None) -> list[str | int]:
        return self.path(data, variables)

    def path_in_process(self, data: Any) -> list[str | int]:
        """The lint's path probe: a JSONPath is always evaluated in-process."""
        return self.path(data)

    def _find(self, data: Any, variables: Mapping[str, Any] | None) -> list[Any]:
        start = data if self._root is None else (variables or {}).get(self._root)
        try:
            return list(self._path.find(start))
        except Exception as exc:  # noqa: BLE001 - any evaluation failure is the expression's error
            raise ExpressionError(f"JSONPath expression failed: {type(exc).__name__}: {exc}",
                                  expression=self.text) from None


class JsonPathCache:
    """Process-wide cache of compiled JSONPath expressions, keyed by (text, variables)."""

    def __init__(self) -> None:
        self._items: dict[tuple[str, tuple[str, ...]], JsonPathExpression] = {}
        self._lock = threading.Lock()

    def compile(self, text: str, *, extra_variables: Iterable[str] = ()) -> JsonPathExpression:
        body = strip_jsonpath(text)
        names = STANDARD_VARIABLES + tuple(v for v in extra_variables if v not in STANDARD_VARIABLES)
        key = (body, names)
        cached = self._items.get(key)
        if cached is not None:
            return cached
        expression = _compile(body, names)
        with self._lock:
            self._items.setdefault(key, expression)
        return expression


CACHE = JsonPathCache()


def compile_jsonpath(text: str, *, extra_variables: Iterable[str] = (), as_path: bool = False) -> JsonPathExpression:
    """Compile (or fetch from the cache) a JSONPath (``${ }``/``{{ }}`` optional)."""
    expression = CACHE.compile(text, extra_variables=extra_variables)
    if as_path and expression._steps is None:
        raise ExpressionSyntaxError("JSONPath expression does not name a location (use names and indexes, "
                                    "e.g. $.result)", expression=expression.text)
    return expression


def _walk(value: Any, steps: tuple[str | int, ...]) -> Any:
    for step in steps:
        if isinstance(step, int) and isinstance(value, list) and -len(value) <= step < len(value):
            value = value[step]
        elif isinstance(step, str) and isinstance(value, dict):
            value = value.get(step)
        else:
            return None
    return value


_PARSER: list[Any] = []  # one parser: building jsonpath-ng's parse tables takes ~100 ms
_PARSER_LOCK = threading.Lock()  # and a PLY parser is not reentrant


def _parse(text: str) -> Any:
    with _PARSER_LOCK:
        if not _PARSER:
            from jsonpath_ng.ext.parser import ExtentedJsonPathParser

            _PARSER.append(ExtentedJsonPathParser())
        return _PARSER[0].parse(text)


def _compile(body: str, names: tuple[str, ...]) -> JsonPathExpression:
    from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError

    root, source = None, body
    variable = _VARIABLE.match(body)
    if variable is not None:
        if variable.group("name") not in names:
            raise ExpressionSyntaxError(f"JSONPath expression does not compile: ${variable.group('name')} is not "
                                        f"defined (known: {', '.join('$' + n for n in names)})", expression=body)
        root, source = variable.group("name"), "$" + variable.group("rest")
    if not source.startswith("$"):
        raise ExpressionSyntaxError("JSONPath expression does not compile: it must start with $ "
                                    "(the data) or a variable such as $WORKFLOW", expression=body)
    try:
        parsed = _parse(_DOT_BRACKET.sub("[", source))
    except (JsonPathLexerError, JsonPathParserError, Exception) as exc:  # noqa: BLE001 - the parser's own words
        raise ExpressionSyntaxError(f"JSONPath expression does not compile: {exc}", expression=body) from None
    from xflow_runtime.expressions.jsonpath_tree import definite_steps, is_definite, jayway_tree

    tree = jayway_tree(parsed)
    return JsonPathExpression(body, names, tree, root, is_definite(tree), definite_steps(tree))
