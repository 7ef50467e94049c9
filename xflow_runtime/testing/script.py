"""Reply scripts for the scripted model server: what to answer, in which order, under which rule.

Pure logic, no I/O. A :class:`Script` holds an ordered queue of replies (consumed one per chat
request) and a list of :class:`Rule` s (checked first, in order, against the request). A reply is
text, a JSON value (sent as the message text), one or more tool calls (several = parallel tool
calls), or an HTTP error. The YAML form users write is read by :func:`script_from_data`::

    latency: 0.05                  # seconds added to every call (optional)
    replies:                       # consumed in order
      - text: "Hello!"
      - tool_calls:
          - {name: SEARCH_DOCUMENTS, arguments: {query: refunds}}
          - {name: GET_ORDER, arguments: {id: 42}}
      - json: {response: "Refunds take 5 days."}
      - error: {status: 429, message: slow down}
    rules:                         # checked before the queue; first match wins
      - when: {last_user_contains: "weather", tools: true, model: gpt-4o, tool_messages: 0}
        reply: {text: "Sunny."}
        times: 1                   # optional: how often the rule may fire
    default: {text: "I have nothing more to say."}   # when queue and rules are exhausted
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from xflow_runtime.errors import XFlowError


class ScriptError(XFlowError):
    """A reply script is malformed."""


@dataclass(frozen=True)
class ScriptedToolCall:
    """One tool call the model "makes". ``arguments`` is sent JSON-encoded unless already a string
    (a string lets a test send deliberately malformed arguments)."""

    name: str
    arguments: Any = field(default_factory=dict)
    id: str | None = None

    def arguments_text(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass(frozen=True)
class Reply:
    """One answer of the model. Exactly one of text / json / tool_calls / error status applies;
    ``text`` may accompany tool calls (some models narrate)."""

    text: str | None = None
    json_value: Any = None
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    status: int = 200
    error_message: str = "scripted failure"
    latency: float | None = None
    finish_reason: str | None = None

    @property
    def is_error(self) -> bool:
        return self.status >= 400

    def content(self) -> str | None:
        if self.json_value is not None:
            return json.dumps(self.json_value)
        return self.text


@dataclass(frozen=True)
class RequestView:
    """What rules may look at in a chat request."""

    model: str
    last_user_message: str
    has_tools: bool
    tool_messages: int = 0

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> "RequestView":
        messages = body.get("messages") or []
        last_user = ""
        for message in reversed(messages):
            if isinstance(message, Mapping) and message.get("role") == "user":
                last_user = message_text(message.get("content"))
                break
        tool_messages = sum(1 for m in messages if isinstance(m, Mapping) and m.get("role") == "tool")
        return cls(model=str(body.get("model", "")), last_user_message=last_user, has_tools=bool(body.get("tools")),
                   tool_messages=tool_messages)


@dataclass(frozen=True)
class Rule:
    """Answer ``reply`` when every given condition holds. ``last_user_matches`` is a regex searched
    in the last user message; ``tool_messages`` is the number of tool results the request carries
    (how far a tool loop has got); ``times`` bounds how often the rule fires (``None``: always)."""

    reply: Reply
    last_user_contains: str | None = None
    last_user_matches: str | None = None
    tools: bool | None = None
    model: str | None = None
    tool_messages: int | None = None
    times: int | None = None

    def matches(self, request: RequestView) -> bool:
        if self.last_user_contains is not None and self.last_user_contains not in request.last_user_message:
            return False
        if self.last_user_matches is not None and not re.search(self.last_user_matches, request.last_user_message):
            return False
        if self.tools is not None and self.tools != request.has_tools:
            return False
        if self.tool_messages is not None and self.tool_messages != request.tool_messages:
            return False
        return self.model is None or _model_matches(self.model, request.model)


@dataclass(frozen=True)
class Script:
    replies: tuple[Reply, ...] = ()
    rules: tuple[Rule, ...] = ()
    default: Reply | None = None
    latency: float = 0.0


class ScriptCursor:
    """The mutable position in a :class:`Script` (which replies and rule uses are consumed)."""

    def __init__(self, script: Script):
        self.script = script
        self._next_reply = 0
        self._rule_uses = [0] * len(script.rules)

    def next_reply(self, request: RequestView) -> Reply | None:
        for index, rule in enumerate(self.script.rules):
            if rule.times is not None and self._rule_uses[index] >= rule.times:
                continue
            if rule.matches(request):
                self._rule_uses[index] += 1
                return rule.reply
        if self._next_reply < len(self.script.replies):
            self._next_reply += 1
            return self.script.replies[self._next_reply - 1]
        return self.script.default

    @property
    def replies_left(self) -> int:
        return len(self.script.replies) - self._next_reply


def message_text(content: Any) -> str:
    """The text of a message ``content`` (a string, or a list of content parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    return "" if content is None else str(content)


def _model_matches(expected: str, actual: str) -> bool:
    # litellm strips the provider prefix ("openai/gpt-4o" arrives as "gpt-4o"); accept either.
    return actual == expected or actual == expected.split("/", 1)[-1]


# ---------------------------------------------------------------- building scripts from data


def as_script(value: "Script | Sequence[Any] | Mapping[str, Any] | None") -> Script:
    """Accept a :class:`Script`, a list of replies, or the mapping form of a YAML script."""
    if value is None:
        return Script()
    if isinstance(value, Script):
        return value
    if isinstance(value, Mapping):
        return script_from_data(value)
    if isinstance(value, Sequence) and not isinstance(value, str):
        return Script(replies=tuple(as_reply(item) for item in value))
    raise ScriptError(f"a reply script must be a list or a mapping, found {type(value).__name__}")


def script_from_data(data: Mapping[str, Any]) -> Script:
    unknown = set(data) - {"replies", "rules", "default", "latency"}
    if unknown:
        raise ScriptError(f"unknown reply-script keys: {', '.join(sorted(unknown))}")
    replies = data.get("replies") or []
    if not isinstance(replies, list):
        raise ScriptError("'replies' must be a list")
    rules = data.get("rules") or []
    if not isinstance(rules, list):
        raise ScriptError("'rules' must be a list")
    default = data.get("default")
    return Script(
        replies=tuple(as_reply(item) for item in replies),
        rules=tuple(_rule(item) for item in rules),
        default=None if default is None else as_reply(default),
        latency=float(data.get("latency") or 0.0),
    )


def as_reply(item: Any) -> Reply:
    """A :class:`Reply`, a plain string (text), or a mapping with one of text/json/tool_calls/error."""
    if isinstance(item, Reply):
        return item
    if isinstance(item, str):
        return Reply(text=item)
    if not isinstance(item, Mapping):
        raise ScriptError(f"a reply must be a string or a mapping, found {type(item).__name__}")
    unknown = set(item) - {"text", "json", "tool_calls", "error", "latency", "finish_reason"}
    if unknown:
        raise ScriptError(f"unknown reply keys: {', '.join(sorted(unknown))}")
    kinds = [key for key in ("json", "tool_calls", "error") if key in item]
    text_conflict = "text" in item and kinds and kinds[0] != "tool_calls"  # text may only narrate tool calls
    if len(kinds) > 1 or text_conflict or (not kinds and "text" not in item):
        raise ScriptError(f"a reply needs exactly one of text, json, tool_calls, error; found {sorted(item)}")
    latency = item.get("latency")
    common: dict[str, Any] = {"latency": None if latency is None else float(latency),
                              "finish_reason": item.get("finish_reason")}
    if "error" in item:
        error = item["error"]
        if isinstance(error, int):
            return Reply(status=error, **common)
        if not isinstance(error, Mapping) or not isinstance(error.get("status"), int):
            raise ScriptError("'error' must be an HTTP status or {status: int, message: str}")
        return Reply(status=error["status"], error_message=str(error.get("message", "scripted failure")), **common)
    if "tool_calls" in item:
        calls = item["tool_calls"]
        if not isinstance(calls, list) or not calls:
            raise ScriptError("'tool_calls' must be a non-empty list")
        return Reply(text=item.get("text"), tool_calls=tuple(_tool_call(call) for call in calls), **common)
    if "json" in item:
        return Reply(json_value=item["json"], **common)
    text = item["text"]
    if not isinstance(text, str):
        raise ScriptError("'text' must be a string")
    return Reply(text=text, **common)


def _tool_call(call: Any) -> ScriptedToolCall:
    if isinstance(call, ScriptedToolCall):
        return call
    if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
        raise ScriptError("each tool call needs a string 'name' (and optional 'arguments', 'id')")
    return ScriptedToolCall(name=call["name"], arguments=call.get("arguments", {}), id=call.get("id"))


def _rule(item: Any) -> Rule:
    if isinstance(item, Rule):
        return item
    if not isinstance(item, Mapping) or "reply" not in item:
        raise ScriptError("each rule needs 'reply' (and optional 'when', 'times')")
    when = item.get("when") or {}
    if not isinstance(when, Mapping):
        raise ScriptError("a rule's 'when' must be a mapping")
    unknown = set(when) - {"last_user_contains", "last_user_matches", "tools", "model", "tool_messages"}
    if unknown:
        raise ScriptError(f"unknown rule conditions: {', '.join(sorted(unknown))}")
    times = item.get("times")
    return Rule(
        reply=as_reply(item["reply"]),
        last_user_contains=when.get("last_user_contains"),
        last_user_matches=when.get("last_user_matches"),
        tools=when.get("tools"),
        model=when.get("model"),
        tool_messages=when.get("tool_messages"),
        times=None if times is None else int(times),
    )


def load_script(path: str) -> Script:
    """Read a YAML (or JSON) reply-script file."""
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except OSError as error:
        raise ScriptError(f"cannot read reply script {path}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise ScriptError(f"reply script {path} is not valid YAML: {error}") from None
    try:
        return as_script(data)
    except ScriptError as error:
        raise ScriptError(f"reply script {path}: {error}") from None
