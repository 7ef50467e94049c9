"""OpenAI wire format for the scripted model server: completion bodies, SSE chunks, embeddings.

Pure functions. Token counts are deterministic estimates (words and punctuation), good enough
for usage and cost bookkeeping in tests; they are not tiktoken counts.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
from typing import Any, Iterator, Mapping, Sequence

from xflow_runtime.testing.script import Reply, message_text

_TOKEN = re.compile(r"\w+|[^\w\s]")
_WORD = re.compile(r"\w+")


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def prompt_tokens(body: Mapping[str, Any]) -> int:
    total = 0
    for message in body.get("messages") or []:
        if isinstance(message, Mapping):
            total += 4 + count_tokens(message_text(message.get("content")))
            for call in message.get("tool_calls") or []:
                total += count_tokens(json.dumps(call))
    if body.get("tools"):
        total += count_tokens(json.dumps(body["tools"]))
    return total


def _tool_calls_wire(reply: Reply, call_number: int) -> list[dict[str, Any]]:
    return [
        {
            "id": call.id or f"call_{call_number}_{index}",
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments_text()},
        }
        for index, call in enumerate(reply.tool_calls)
    ]


def _finish_reason(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _usage(body: Mapping[str, Any], reply: Reply) -> dict[str, int]:
    prompt = prompt_tokens(body)
    completion = count_tokens(reply.content() or "") + sum(
        count_tokens(call.name + call.arguments_text()) for call in reply.tool_calls
    )
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def completion_body(body: Mapping[str, Any], reply: Reply, call_number: int, created: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content()}
    if reply.tool_calls:
        message["tool_calls"] = _tool_calls_wire(reply, call_number)
    return {
        "id": f"chatcmpl-scripted-{call_number}",
        "object": "chat.completion",
        "created": created,
        "model": str(body.get("model", "scripted")),
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(reply), "logprobs": None}],
        "usage": _usage(body, reply),
    }


def completion_chunks(body: Mapping[str, Any], reply: Reply, call_number: int, created: int) -> Iterator[bytes]:
    """The same answer as Server-Sent Events (``stream: true``), ending with ``data: [DONE]``."""
    base = {
        "id": f"chatcmpl-scripted-{call_number}",
        "object": "chat.completion.chunk",
        "created": created,
        "model": str(body.get("model", "scripted")),
    }

    def event(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        chunk = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
        return b"data: " + json.dumps(chunk).encode() + b"\n\n"

    yield event({"role": "assistant", "content": ""})
    content = reply.content()
    if content:
        # Two pieces, so stream consumers really have to join deltas.
        middle = len(content) // 2
        for piece in (content[:middle], content[middle:]):
            if piece:
                yield event({"content": piece})
    for index, call in enumerate(_tool_calls_wire(reply, call_number)):
        yield event({"tool_calls": [{"index": index, **call}]})
    yield event({}, _finish_reason(reply))
    if (body.get("stream_options") or {}).get("include_usage"):
        usage_chunk = {**base, "choices": [], "usage": _usage(body, reply)}
        yield b"data: " + json.dumps(usage_chunk).encode() + b"\n\n"
    yield b"data: [DONE]\n\n"


def error_body(status: int, message: str) -> dict[str, Any]:
    kind = {429: "rate_limit_error", 401: "authentication_error", 400: "invalid_request_error"}.get(status, "api_error")
    return {"error": {"message": message, "type": kind, "code": str(status), "param": None}}


# ---------------------------------------------------------------- embeddings


def hashed_embedding(text: str, dimensions: int) -> list[float]:
    """A normalised hashed bag-of-words vector: texts sharing words point the same way."""
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        bucket = int.from_bytes(digest[:4], "little") % dimensions
        vector[bucket] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(value * value for value in vector))
    if norm == 0.0:
        vector[0] = 1.0  # empty text: a fixed unit vector instead of an unnormalisable zero
        return vector
    return [value / norm for value in vector]


def embeddings_body(body: Mapping[str, Any], default_dimensions: int) -> dict[str, Any]:
    raw_input = body.get("input", "")
    texts: Sequence[Any] = [raw_input] if isinstance(raw_input, str) else list(raw_input)
    dimensions = int(body.get("dimensions") or default_dimensions)
    as_base64 = body.get("encoding_format") == "base64"
    data = []
    total = 0
    for index, text in enumerate(texts):
        text = text if isinstance(text, str) else " ".join(str(token) for token in text)
        total += count_tokens(text)
        vector = hashed_embedding(text, dimensions)
        encoded: Any = base64.b64encode(struct.pack(f"<{dimensions}f", *vector)).decode() if as_base64 else vector
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    return {
        "object": "list",
        "data": data,
        "model": str(body.get("model", "scripted-embedding")),
        "usage": {"prompt_tokens": total, "total_tokens": total},
    }


# ---------------------------------------------------------------- rerank (Cohere's format)


def rerank_body(body: Mapping[str, Any], dimensions: int) -> dict[str, Any]:
    """Scores each document by the cosine of its hashed vector with the query's (shared words
    score high), best first; ``top_n`` cuts the list."""
    query = hashed_embedding(str(body.get("query", "")), dimensions)
    documents = [d if isinstance(d, str) else str((d or {}).get("text", "")) for d in body.get("documents") or []]
    scored = [(sum(a * b for a, b in zip(query, hashed_embedding(text, dimensions))), index)
              for index, text in enumerate(documents)]
    scored.sort(key=lambda item: (-item[0], item[1]))
    top_n = body.get("top_n")
    if isinstance(top_n, int) and top_n > 0:
        scored = scored[:top_n]
    return {"id": "scripted-rerank", "results": [{"index": index, "relevance_score": round(score, 6)}
                                                 for score, index in scored],
            "meta": {"billed_units": {"search_units": 1}}}
