"""The jq engine reports an unfinished text as ending too early, not as a character the user never wrote.

libjq sees the user's text inside our wrapper, so ``.a |`` fails on the wrapper's closing line;
``jq_expressions`` turns that into one plain sentence (the loader shows it as XF121 unchanged).
"""

from __future__ import annotations

import pytest

from xflow_runtime.errors import ExpressionSyntaxError
from xflow_runtime.expressions.jq_expressions import ExpressionCache

TOO_EARLY = "syntax error: the expression ends too early (an operator, bracket or if/then is left open)"


@pytest.mark.parametrize("text", [".a |", ".a and", "{a:", "if . then 1", ".a |\n  .b |", "$WORKFLOW.id |",
                                  ".a | # a comment", "[.a,"])
@pytest.mark.parametrize("as_path", [False, True])
def test_an_unfinished_expression_ends_too_early(text: str, as_path: bool) -> None:
    with pytest.raises(ExpressionSyntaxError) as info:
        ExpressionCache().compile(text, as_path=as_path)
    assert str(info.value) == f"jq expression does not compile: {TOO_EARLY} (in expression: {text.strip()})"


@pytest.mark.parametrize("text, where", [("{a: }", "unexpected '}' (line 1, column 5 of the expression)"),
                                         (".a |\n )", "(line 2, column 2 of the expression)")])
def test_a_mistake_inside_the_text_keeps_its_position(text: str, where: str) -> None:
    with pytest.raises(ExpressionSyntaxError) as info:
        ExpressionCache().compile(text)
    assert where in str(info.value) and "too early" not in str(info.value)
