"""jq expressions: recognition of ``${ … }``, compile-once caching, sandboxed evaluation.

Every expression is compiled once (per process) into a :class:`JqExpression` and cached by its
text. Variables are not bound at compile time: the program is wrapped so that ``$CONST``,
``$SECRETS``, ``$WORKFLOW`` and any extra variables (``$agentOutcome``) arrive with the input on
each evaluation, which lets one compiled program serve every instance and every secret set.

The wrapper also removes jq's ways out of the sandbox: ``env``/``$ENV`` return ``{}``,
``input_filename`` is null, module search paths are empty, and ``import``/``include`` cannot
appear (they are only legal at the top of a program, and the user's text is nested).

Result rule (documented in specs/expressions.md): zero outputs give ``null``, one output gives
that value, several outputs raise :class:`ExpressionError` ("wrap it in [ ] to collect them").
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import jq

from xflow_runtime.errors import ExpressionError, ExpressionSyntaxError
from xflow_runtime.expressions.fast_path import BOUND, Fallback, Isolate, compile_fast
from xflow_runtime.expressions.limits import current_limits

#: Variables bound in every expression. Extra names (e.g. ``agentOutcome``) are declared per use.
STANDARD_VARIABLES: tuple[str, ...] = ("CONST", "SECRETS", "WORKFLOW")

_SANDBOX_PRELUDE = (
    "{} as $ENV | def env: {}; def input_filename: null; def get_search_list: []; "
    'def modulemeta: error("modulemeta is not available in xflow expressions"); '
    "def get_jq_origin: null; def get_prog_origin: null; "
    "def debug: .; def debug(msg): .; def stderr: .; def input_line_number: 0; "
)

#: Every name the prelude redefines (plus the module directives), as words in the user's text.
_SANDBOXED_NAMES = re.compile(
    r"\b(?:env|ENV|input_filename|get_search_list|modulemeta|get_jq_origin|get_prog_origin|debug|stderr|"
    r"input_line_number|import|include)\b"
)

_WRAPPED = re.compile(r"^\s*\$\{(?P<body>.*)\}\s*$", re.DOTALL)
_EMBEDDED = re.compile(r"\$\{(?P<body>[^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")


#: What :meth:`JqExpression.evaluate_now` returns when the evaluation needs the evaluator pool.
PENDING: Any = object()

#: A libjq program not compiled yet: texts the pure-Python evaluator covers are compiled by libjq
#: only when an evaluation falls back to it (~5 ms each, most of a cold start's load time).
#: Safe because every text ``fast_path`` parses is valid jq (tests/definition/test_lazy_jq_compile.py).
_NOT_COMPILED: Any = object()


def is_expression(value: Any) -> bool:
    """True when ``value`` is a string written as ``${ … }`` (whitespace around it allowed)."""
    return isinstance(value, str) and _WRAPPED.match(value) is not None


def strip_expression(text: str) -> str:
    """The jq body of a field that is always an expression: ``${ … }`` or bare jq both work."""
    match = _WRAPPED.match(text)
    return (match.group("body") if match else text).strip()


@dataclass(frozen=True)
class JqExpression:
    """A compiled jq program. Immutable and shareable between threads and instances."""

    text: str
    variables: tuple[str, ...]
    _program: Any = field(repr=False, compare=False)
    _path_program: Any = field(default=None, repr=False, compare=False)
    #: The declared variables the text actually mentions; only these are passed to libjq.
    _bound: tuple[str, ...] = field(default=(), repr=False, compare=False)
    #: For a plain ``.a.b`` path expression, its path, known without running jq.
    _static_path: tuple[str, ...] | None = field(default=None, repr=False, compare=False)
    #: A pure-Python evaluator when the text is in the small subset of ``fast_path``.
    _fast: Callable[[Any], Any] | None = field(default=None, repr=False, compare=False)

    @property
    def isolated(self) -> bool:
        """True when every evaluation needs libjq, which then runs in the evaluator pool
        (specs/limits.md): the text is outside the pure-Python subset."""
        return self._fast is None

    def evaluate_all(self, data: Any, variables: Mapping[str, Any] | None = None) -> list[Any]:
        """Every output of the program on ``data``."""
        if self._fast is None:
            return _isolated_blocking(self._pool_program(path=False), self.text, data, self._bound, variables)
        return _run(self._libjq("_program", path=False), self.text, data, self._bound, variables)

    def evaluate(self, data: Any, variables: Mapping[str, Any] | None = None) -> Any:
        """The single result (zero outputs → ``None``; several → :class:`ExpressionError`).

        Blocks the calling thread for at most the evaluation budget; coroutines use
        :meth:`evaluate_async`, which keeps the event loop free while libjq works elsewhere."""
        if self._fast is not None:
            try:
                return self._run_fast(data, variables)
            except Isolate:  # a case whose cost is not bounded by the data's size
                pass
            except Fallback:  # an error or a case the subset leaves to libjq; still linear
                return _single(self.evaluate_all(data, variables), self.text)
        outputs = _isolated_blocking(self._pool_program(path=False), self.text, data, self._bound, variables)
        return _single(outputs, self.text)

    def evaluate_now(self, data: Any, variables: Mapping[str, Any] | None = None) -> Any:
        """The result when this thread can compute it at once (the pure-Python subset, or its
        linear libjq fallback), else :data:`PENDING`: then await :meth:`evaluate_async`. The
        interpreter's hot path uses it so that an in-process evaluation costs no coroutine."""
        if self._fast is None:
            return PENDING
        try:
            return self._fast(data) if not self._bound else self._run_fast(data, variables)
        except Isolate:
            return PENDING
        except Fallback:
            return _single(self.evaluate_all(data, variables), self.text)

    async def evaluate_async(self, data: Any, variables: Mapping[str, Any] | None = None) -> Any:
        """:meth:`evaluate` for coroutines: an isolated evaluation is awaited, not waited for."""
        value = self.evaluate_now(data, variables)
        if value is not PENDING:
            return value
        outputs = await _isolated(self._pool_program(path=False), self.text, data, self._bound, variables)
        return _single(outputs, self.text)

    async def evaluate_condition_async(self, data: Any, variables: Mapping[str, Any] | None = None) -> bool:
        return await self.evaluate_async(data, variables) is True

    def condition_now(self, data: Any, variables: Mapping[str, Any] | None = None) -> Any:
        """:meth:`evaluate_condition` when it can be computed at once, else :data:`PENDING`."""
        value = self.evaluate_now(data, variables)
        return value if value is PENDING else value is True

    def evaluate_condition(self, data: Any, variables: Mapping[str, Any] | None = None) -> bool:
        """Only a JSON ``true`` selects a branch: null, false and non-booleans do not."""
        return self.evaluate(data, variables) is True

    def path(self, data: Any, variables: Mapping[str, Any] | None = None) -> list[str | int]:
        """The location the expression names (jq ``path(EXPR)``), for ``toStateData`` and the like."""
        static = self._known_path(data)
        if static is not None:
            return static
        if self._fast is None:
            outputs = _isolated_blocking(self._pool_program(path=True), self.text, data, self._bound, variables)
        else:
            outputs = _run(self._libjq("_path_program", path=True), self.text, data, self._bound, variables)
        return self._location(outputs)

    async def path_async(self, data: Any, variables: Mapping[str, Any] | None = None) -> list[str | int]:
        """:meth:`path` for coroutines."""
        if self._fast is not None:
            return self.path(data, variables)
        static = self._known_path(data)
        if static is not None:
            return static
        return self._location(await _isolated(self._pool_program(path=True), self.text, data, self._bound,
                                              variables))

    def path_in_process(self, data: Any) -> list[str | int]:
        """:meth:`path` by libjq in this process, without a budget: only for a caller that has ruled
        out loops itself (the linter, probing a text without loop builtins on ``null``), where
        starting an evaluator process would cost more than the probe."""
        static = self._known_path(data)
        if static is not None:
            return static
        return self._location(_run(self._libjq("_path_program", path=True), self.text, data, self._bound, None))

    def _known_path(self, data: Any) -> list[str | int] | None:
        if self._path_program is None:
            raise ExpressionError("expression was not compiled as a path", expression=self.text)
        if self._static_path is not None and _walkable(data, self._static_path):
            return list(self._static_path)
        return None

    def _location(self, outputs: list[Any]) -> list[str | int]:
        result = _single(outputs, self.text)
        if not isinstance(result, list):
            raise ExpressionError("expression does not name a location", expression=self.text)
        return result

    def _run_fast(self, data: Any, variables: Mapping[str, Any] | None) -> Any:
        if not self._bound:
            return self._fast(data)  # type: ignore[misc]
        BOUND.values = variables or {}
        try:
            return self._fast(data)  # type: ignore[misc]
        finally:
            BOUND.values = None

    def _pool_program(self, *, path: bool) -> str:
        return _wrap(self.text, self._bound, path=path)

    def _libjq(self, attribute: str, *, path: bool) -> Any:
        program = getattr(self, attribute)
        if program is _NOT_COMPILED:  # a race compiles twice, harmlessly: both programs are equal
            program = _compile(_wrap(self.text, self._bound, path=path), self.text)
            object.__setattr__(self, attribute, program)
        return program


class ExpressionCache:
    """Process-wide cache of compiled programs, keyed by (text, variables, path mode)."""

    def __init__(self) -> None:
        self._items: dict[tuple[str, tuple[str, ...], bool], JqExpression] = {}
        self._lock = threading.Lock()

    def compile(self, text: str, *, extra_variables: Iterable[str] = (), as_path: bool = False) -> JqExpression:
        body = strip_expression(text)
        names = STANDARD_VARIABLES + tuple(v for v in extra_variables if v not in STANDARD_VARIABLES)
        key = (body, names, as_path)
        cached = self._items.get(key)
        if cached is not None:
            return cached
        bound = tuple(name for name in names if f"${name}" in body)
        fast = compile_fast(body, {name: {} if name in STANDARD_VARIABLES else None for name in bound})
        if fast is None:  # compiling now is also the syntax check
            program = _compile(_wrap(body, bound, path=False), body)
            path_program = _compile(_wrap(body, bound, path=True), body) if as_path else None
        else:
            program, path_program = _NOT_COMPILED, _NOT_COMPILED if as_path else None
        static_path = _static_path(body) if as_path else None
        expression = JqExpression(body, names, program, path_program, bound, static_path, fast)
        with self._lock:
            self._items.setdefault(key, expression)
        return expression

    def __len__(self) -> int:
        return len(self._items)


#: The cache every component shares. Use :func:`compile_expression` rather than this directly.
CACHE = ExpressionCache()


def compile_expression(text: str, *, extra_variables: Iterable[str] = (), as_path: bool = False) -> JqExpression:
    """Compile (or fetch from the cache) the expression ``text`` (``${ … }`` or bare jq)."""
    return CACHE.compile(text, extra_variables=extra_variables, as_path=as_path)


def interpolate(template: str, data: Any, variables: Mapping[str, Any] | None = None) -> str:
    """Replace each embedded ``${ … }`` in ``template`` with its value rendered as text.

    Used for GraphQL ``selectionSet`` (the only place 0.8 defines embedded expressions).
    Strings are inserted as they are; other values as compact JSON.
    """
    def replace(match: re.Match[str]) -> str:
        return _as_text(compile_expression(match.group("body")).evaluate(data, variables))

    return _EMBEDDED.sub(replace, template)


async def interpolate_async(template: str, data: Any, variables: Mapping[str, Any] | None = None) -> str:
    """:func:`interpolate` for coroutines (pieces that need libjq are awaited, specs/limits.md)."""
    values = iter([await compile_expression(match.group("body")).evaluate_async(data, variables)
                   for match in _EMBEDDED.finditer(template)])
    return _EMBEDDED.sub(lambda match: _as_text(next(values)), template)


def _as_text(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


_PLAIN_PATH = re.compile(r"^(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")


def _static_path(body: str) -> tuple[str, ...] | None:
    """``.a.b`` → ``("a", "b")``, ``.`` → ``()``; ``None`` for anything jq must work out."""
    if body == ".":
        return ()
    if _PLAIN_PATH.match(body):
        return tuple(body[1:].split("."))
    return None


def _walkable(data: Any, path: tuple[str, ...]) -> bool:
    """Whether jq's ``path()`` would succeed: every step indexes an object or null."""
    current = data
    for key in path:
        if current is None:
            return True
        if not isinstance(current, dict):
            return False
        current = current.get(key)
    return True


def _wrap(body: str, names: tuple[str, ...], *, path: bool) -> str:
    # Input arrives as [data, var1, var2, ...] (just data when no variable is mentioned); the
    # newline protects the closing parenthesis from a trailing '#' comment in the user's text.
    # The sandbox prelude costs ~10 µs per evaluation in libjq, so it is included only when the
    # text mentions one of the names it redefines (a jq program can only call what it names).
    inner = f"path({body}\n)" if path else f"({body}\n)"
    prelude = _SANDBOX_PRELUDE if _SANDBOXED_NAMES.search(body) else ""
    if not names:
        return f"{prelude}{inner}"
    binds = " | ".join(f".[{i + 1}] as ${name}" for i, name in enumerate(names))
    return f"{prelude}{binds} | .[0] | {inner}"


def _compile(program_text: str, body: str) -> Any:
    try:
        return jq.compile(program_text)
    except ValueError as exc:
        offset = program_text.index(body) if body in program_text else 0
        message = _describe_compile_error(str(exc), offset, closing_line=body.count("\n") + 2)
        raise ExpressionSyntaxError(f"jq expression does not compile: {message}", expression=body) from None


def _describe_compile_error(message: str, body_offset: int, *, closing_line: int) -> str:
    """Keep libjq's reason and translate its position from our wrapper back into the user's text.

    An unfinished text (``.a |``) makes libjq trip over the wrapper's own closing line, a place
    the user never wrote: that is reported as the expression ending too early.
    """
    first = message.splitlines()[0] if message else "syntax error"
    first = re.sub(r"^jq: error(?: \(at [^)]*\))?: ", "", first)
    where = re.search(r" at <top-level>, line (\d+), column (\d+):?$", first)
    if not where:
        return first.rstrip(":")
    reason = first[: where.start()]
    line, column = int(where.group(1)), int(where.group(2))
    if (line, column) == (closing_line, 1) and reason.startswith("syntax error, unexpected"):
        return "syntax error: the expression ends too early (an operator, bracket or if/then is left open)"
    if line == 1:
        column = max(1, column - body_offset)
    return f"{reason} (line {line}, column {column} of the expression)"


def _run(program: Any, body: str, data: Any, names: tuple[str, ...], variables: Mapping[str, Any] | None) -> list[Any]:
    try:
        return program.input_value(_payload(data, names, variables)).all()
    except ValueError as exc:
        raise jq_failure(str(exc), body) from None
    except TypeError as exc:  # data that is not JSON-serialisable
        raise ExpressionError(f"expression input is not JSON: {exc}", expression=body) from None


def _isolated_blocking(program: str, body: str, data: Any, names: tuple[str, ...],
                       variables: Mapping[str, Any] | None) -> list[Any]:
    from xflow_runtime.expressions.evaluator_pool import POOL

    return POOL.run_blocking(program, _payload(data, names, variables), current_limits(), body)


async def _isolated(program: str, body: str, data: Any, names: tuple[str, ...],
                    variables: Mapping[str, Any] | None) -> list[Any]:
    from xflow_runtime.expressions.evaluator_pool import POOL

    return await POOL.run(program, _payload(data, names, variables), current_limits(), body)


def jq_failure(message: str, body: str) -> ExpressionError:
    """The error for libjq's run-time ``message`` (the same in-process and in the evaluator pool)."""
    return ExpressionError(f"jq expression failed: {_clean(message)}", expression=body)


def _payload(data: Any, names: tuple[str, ...], variables: Mapping[str, Any] | None) -> Any:
    if not names:
        return data
    values = variables or {}
    return [data, *(values.get(name, {} if name in STANDARD_VARIABLES else None) for name in names)]


def _single(outputs: list[Any], body: str) -> Any:
    if not outputs:
        return None
    if len(outputs) == 1:
        return outputs[0]
    raise ExpressionError(
        f"expression produced {len(outputs)} results where one was expected; wrap it in [ ] to collect them",
        expression=body,
    )


def _clean(message: str) -> str:
    # libjq may mention positions in our wrapped program; they would only confuse the user.
    message = re.sub(r"\s*at <top-level>, line \d+:.*", "", message, flags=re.DOTALL)
    return re.sub(r"\s*\(while parsing '.*'\)", "", message, flags=re.DOTALL).strip()
