"""The memory block injected into the system prompt: rendered deterministically.

The block depends only on the memories' ids, titles, tags, contents and order — never on a
clock, a request id or dict ordering — so the rendered system prompt is byte-identical from one
call to the next until a memory is written or deleted (provider prompt caching keeps working).
Memories are listed oldest first among the N most recently *created*: an update in place does
not move an entry, and a new memory is appended at the end.

The template is Jinja2, rendered in the agent prompts' sandbox; users may pass their own. It
receives ``memories`` (list of {id, title, tags, content}) and ``facts`` (list of {id, content,
category, importance}).
"""

from __future__ import annotations

from typing import Any, Sequence

from xflow_runtime.memory.longterm.records import Memory

DEFAULT_TEMPLATE = """\
{%- if memories %}
<agent_memory>
Your saved memories from previous conversations:
{%- for m in memories %}
- [{{ m.id }}] {{ m.title }}{% if m.tags %} [{{ m.tags | join(", ") }}]{% endif %}: {{ m.content }}
{%- endfor %}
Use memory_search to find older memories not shown here.
Use memory_write to save new important information.
Use memory_delete to remove outdated memories.
</agent_memory>
{%- endif %}
{%- if facts %}
<user_facts>
What you know about this user from earlier conversations:
{%- for f in facts %}
- {{ f.content }}
{%- endfor %}
</user_facts>
{%- endif %}
"""

_compiled: dict[str, Any] = {}


def _template(source: str) -> Any:
    template = _compiled.get(source)
    if template is None:
        from xflow_runtime.agent.prompts import sandbox

        template = _compiled[source] = sandbox().from_string(source)
    return template


def _one_line(text: str) -> str:
    # A newline inside a memory would let its content pose as another entry or instruction line.
    return " ".join(text.split())


def render_memory_block(memories: Sequence[Memory], facts: Sequence[Memory] = (),
                        template: str | None = None) -> str:
    """The block for ``memories`` and ``facts`` (each already in display order); ``""`` when
    both are empty."""
    context = {
        "memories": [{"id": m.id, "title": _one_line(m.title or ""), "tags": [_one_line(t) for t in m.tags],
                      "content": _one_line(m.content)} for m in memories],
        "facts": [{"id": f.id, "content": _one_line(f.content), "category": f.category,
                   "importance": f.importance} for f in facts],
    }
    return _template(template or DEFAULT_TEMPLATE).render(context).strip("\n")


def with_memory_block(system_prompt: str | None, block: str) -> str:
    """The system prompt with the block appended after the static instructions (the static part
    stays the cache prefix)."""
    if not block:
        return system_prompt or ""
    return f"{system_prompt}\n\n{block}" if system_prompt else block
