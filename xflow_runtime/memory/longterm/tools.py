"""The three tools offered to the model when ``longTermMemory`` is enabled (schemas + argument
checks; pure). Bad arguments become a message for the model, never an exception in the loop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from xflow_runtime.memory.longterm.config import DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT
from xflow_runtime.memory.longterm.repository import MAX_TITLE

TOOL_NAMES = ("memory_write", "memory_search", "memory_delete")
MAX_CONTENT = 4000
MAX_TAGS = 16

TOOL_SCHEMAS: tuple[dict[str, Any], ...] = (
    {"type": "function", "function": {
        "name": "memory_write",
        "description": "Save a memory for future conversations. A memory with the same title is "
                       "replaced (use the same title to update it).",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["title", "content"],
                       "properties": {
                           "title": {"type": "string", "description": "Short unique title, e.g. 'Customer timezone'."},
                           "content": {"type": "string", "description": "The memory: concise and factual."},
                           "tags": {"type": "array", "items": {"type": "string"},
                                    "description": "Optional tags for categorisation."}}}}},
    {"type": "function", "function": {
        "name": "memory_search",
        "description": "Search saved memories by keywords and meaning, including older ones not "
                       "shown in the system prompt.",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["query"],
                       "properties": {
                           "query": {"type": "string", "description": "What to look for."},
                           "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT,
                                     "description": f"Max results (default {DEFAULT_SEARCH_LIMIT})."}}}}},
    {"type": "function", "function": {
        "name": "memory_delete",
        "description": "Delete a memory that is outdated or wrong, by its id.",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["memory_id"],
                       "properties": {"memory_id": {"type": "string", "description": "The memory's id."}}}}},
)


class ToolArgumentError(ValueError):
    """The model called a memory tool with unusable arguments (reported back to it)."""


@dataclass(frozen=True)
class WriteArgs:
    title: str
    content: str
    tags: tuple[str, ...]


def _text(arguments: Mapping[str, Any], name: str, limit: int) -> str:
    value = arguments.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ToolArgumentError(f"'{name}' must be a non-empty string")
    value = value.strip()
    if len(value) > limit:
        raise ToolArgumentError(f"'{name}' is longer than {limit} characters")
    return value


def write_args(arguments: Mapping[str, Any]) -> WriteArgs:
    raw_tags = arguments.get("tags") or []
    if isinstance(raw_tags, str):  # "a, b" is accepted too (some models send one string)
        raw_tags = raw_tags.split(",")
    if not isinstance(raw_tags, list) or not all(isinstance(tag, str) for tag in raw_tags):
        raise ToolArgumentError("'tags' must be a list of strings")
    tags: list[str] = []
    for tag in raw_tags:
        tag = " ".join(tag.split())
        if tag and tag not in tags:
            tags.append(tag[:50])
    return WriteArgs(_text(arguments, "title", MAX_TITLE), _text(arguments, "content", MAX_CONTENT),
                     tuple(tags[:MAX_TAGS]))


def search_args(arguments: Mapping[str, Any]) -> tuple[str, int]:
    limit = arguments.get("limit", DEFAULT_SEARCH_LIMIT)
    if limit is None:
        limit = DEFAULT_SEARCH_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ToolArgumentError(f"'limit' must be an integer from 1 to {MAX_SEARCH_LIMIT}")
    return _text(arguments, "query", 1000), min(limit, MAX_SEARCH_LIMIT)


def delete_args(arguments: Mapping[str, Any]) -> str:
    return _text(arguments, "memory_id", 64)
