"""Memory: chat memory (``xflow_runtime.memory.chat``: windows, token counts, scopes, storage)
and long-term memory (``xflow_runtime.memory.longterm``). Each subpackage's ``__all__`` is its
public face; both import their heavy dependencies lazily."""

__all__: list[str] = []
