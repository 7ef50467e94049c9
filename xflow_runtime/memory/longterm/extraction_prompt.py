"""The fact-extraction prompt and the strict parser of its answer (pure; no I/O).

Written for xflow-runtime in the spirit of Polyant's extractor: standalone third-person facts,
absolute dates computed from today's date, the conversation's language, a closed category set,
importance 1–10, a bare JSON array. A reply that is not such an array is an *error* (the job is
retried), never "no facts"; ``[]`` is the only way to say "nothing worth keeping".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date
from typing import Any, Mapping, Sequence

from xflow_runtime.memory.longterm.records import FACT_CATEGORIES

MAX_FACT_CHARS = 1000

SYSTEM_PROMPT = """\
You read a conversation between a user and an assistant and write down what is worth \
remembering about the user for future conversations.

Today is {today} ({weekday}).

Write each fact so that:
- it is one self-contained sentence about "the user", in the third person, that makes sense \
to someone who never saw this conversation;
- every time reference is an absolute calendar date computed from today's date \
(e.g. "tomorrow" becomes {tomorrow}); never write "today", "tomorrow", "next week" or similar;
- it is in the same language the user writes in.

Keep durable information only: preferences, personal facts, plans and events, people and \
relationships, decisions. Skip greetings, small talk, unanswered questions, what the \
assistant said, and details that only matter for the request being handled right now.

Give each fact a category, exactly one of: {categories}; and an importance from 1 \
(trivial) to 10 (critical, e.g. a severe allergy).

Answer with a JSON array and nothing else — no prose, no code fences:
[{{"content": "...", "category": "...", "importance": 5}}]
Answer [] when there is nothing worth remembering."""


class ExtractionFormatError(ValueError):
    """The extraction model's answer is not the required JSON array."""


@dataclass(frozen=True)
class ExtractedFact:
    content: str
    category: str
    importance: int


def system_prompt(today: date) -> str:
    from datetime import timedelta

    return SYSTEM_PROMPT.format(today=today.isoformat(), weekday=today.strftime("%A"),
                                tomorrow=(today + timedelta(days=1)).isoformat(),
                                categories=", ".join(FACT_CATEGORIES))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    return ""


def transcript(messages: Sequence[Mapping[str, Any]]) -> str:
    """User and assistant text, one line per message (tool traffic and system text left out)."""
    lines = []
    for message in messages:
        role = message.get("role")
        text = " ".join(_text(message.get("content")).split())
        if role in ("user", "assistant") and text:
            lines.append(f"{'User' if role == 'user' else 'Assistant'}: {text}")
    return "\n".join(lines)


def extraction_messages(messages: Sequence[Mapping[str, Any]], today: date) -> list[dict[str, str]]:
    return [{"role": "system", "content": system_prompt(today)},
            {"role": "user", "content": transcript(messages)}]


_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.DOTALL)


def parse_facts(reply: str | None) -> list[ExtractedFact]:
    """The facts in the model's answer. Tolerates surrounding whitespace and one code fence
    (models add them despite instructions); anything else malformed raises
    :class:`ExtractionFormatError`. Unknown categories become ``general``; importance is clamped
    to 1–10; empty or duplicate contents are dropped."""
    if reply is None:
        raise ExtractionFormatError("the extraction model returned no text")
    text = reply.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        data = json.loads(text)
    except ValueError:
        raise ExtractionFormatError(f"not JSON: {text[:80]!r}") from None
    if not isinstance(data, list):
        raise ExtractionFormatError(f"expected a JSON array, found {type(data).__name__}")
    facts: list[ExtractedFact] = []
    seen: set[str] = set()
    for item in data:
        if not isinstance(item, Mapping) or not isinstance(item.get("content"), str):
            raise ExtractionFormatError("each fact must be an object with a string 'content'")
        content = " ".join(item["content"].split())[:MAX_FACT_CHARS]
        if not content or content.casefold() in seen:
            continue
        seen.add(content.casefold())
        category = item.get("category")
        category = category if category in FACT_CATEGORIES else "general"
        importance = item.get("importance", 5)
        if isinstance(importance, bool) or not isinstance(importance, (int, float)):
            importance = 5
        facts.append(ExtractedFact(content, category, max(1, min(10, int(importance)))))
    return facts
