"""The ``aiagent`` state: prompt rendering (jq or sandboxed Jinja2), the tool loop, structured
output, outcomes and multi-turn conversations. ``handler`` registers the state with the
interpreter; nothing here imports litellm until an LLM call is made. Decisions: ``specs/agent.md``.
"""

from xflow_runtime.interpreter.records import AGENT_REPLY as AGENT_REPLY  # the one list of record kinds

#: Topic of the messages a user sends to an agent conversation waiting in an instance
#: (``Runtime.send_message``); the payload is a string or ``{"text": …}``.
USER_MESSAGE_TOPIC = "user-message"

__all__ = ["AGENT_REPLY", "USER_MESSAGE_TOPIC"]
