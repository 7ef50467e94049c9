"""Testing helpers for xflow-runtime and for its users: the scripted OpenAI-compatible model server.

``ScriptedModelServer`` answers ``/v1/chat/completions`` and ``/v1/embeddings`` on 127.0.0.1 from a
reply script, records every request, and can add latency and HTTP failures. The pytest plugin
``xflow_runtime.testing.pytest_plugin`` provides it as the ``scripted_model`` fixture.
"""

from xflow_runtime.testing.script import (
    Reply,
    Rule,
    Script,
    ScriptedToolCall,
    ScriptError,
    as_script,
    load_script,
)
from xflow_runtime.testing.server import REDACTED, RecordedRequest, ScriptedModelServer, chat_contents

__all__ = [
    "REDACTED",
    "RecordedRequest",
    "Reply",
    "Rule",
    "Script",
    "ScriptError",
    "ScriptedModelServer",
    "ScriptedToolCall",
    "as_script",
    "chat_contents",
    "load_script",
]
