"""Memory: chat memory (``xflow_runtime.memory.chat``: windows, token counts, scopes, storage)
and, later, long-term memory. Sub-packages import their heavy dependencies lazily."""
