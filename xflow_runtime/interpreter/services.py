"""What an instance sees of its runtime beyond functions: who it runs for, the LLM client, the
chat memory and the long-term memory. One typed object per instance (``ExecutionContext.services``),
read by the ``aiagent`` state; the interpreter itself never looks inside.

Nothing here imports litellm, SQLAlchemy or the memory packages: the field types are named for
the type checker only, and every field but ``identity`` may be absent (``None``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence, Union, runtime_checkable

if TYPE_CHECKING:
    from xflow_runtime.a2a.settings import A2ASettings
    from xflow_runtime.agent.longterm_hook import LazyLongTermMemory
    from xflow_runtime.agent.proxy_callbacks import AgentCallbacks
    from xflow_runtime.llm.client import LLMClient, LLMSettings
    from xflow_runtime.memory.longterm import LongTermMemory
    from xflow_runtime.usertask.store import TaskStore

    LongTermMemoryService = Union[LongTermMemory, LazyLongTermMemory]


class ChatMemoryService(Protocol):
    """What an agent state asks of chat memory: a :class:`~xflow_runtime.memory.chat.ChatMemory`,
    or the runtime's lazy one (``runtime/memory.py``) that opens it on first use."""

    async def load_window(self, scope: Any, policy: Any, *, model: str | None) -> list[dict[str, Any]]: ...

    async def append_turn(self, scope: Any, messages: Sequence[Any], *, model: str | None) -> Any: ...

#: Tenant of instances started without one.
DEFAULT_TENANT = "default"


@dataclass(frozen=True)
class Identity:
    """Whom an instance runs for: it scopes chat and long-term memory. Over HTTP both come from
    the caller's credential, never from a request body."""

    tenant: str = DEFAULT_TENANT
    user: str | None = None
    #: The user's erasure epoch when the instance started (``None``: no user or no memory store);
    #: memory writes after a later erasure of the user are refused (specs/memory-longterm.md, privacy).
    erasure_epoch: int | None = None

    @classmethod
    def of(cls, value: "Identity | Mapping[str, Any] | None") -> "Identity":
        """From the ``{"tenant", "user"}`` mapping a durable instance records (or ``None``)."""
        if isinstance(value, Identity):
            return value
        value = value or {}
        return cls(tenant=value.get("tenant") or DEFAULT_TENANT, user=value.get("user") or None,
                   erasure_epoch=value.get("erasure_epoch"))

    def to_dict(self) -> dict[str, Any]:
        recorded: dict[str, Any] = {"tenant": self.tenant, "user": self.user}
        if self.erasure_epoch is not None:
            recorded["erasure_epoch"] = self.erasure_epoch
        return recorded


class ReplyTokenSink(Protocol):
    """Receives the text of an ``aiagent`` LLM call as the model produces it: ``delta`` is the
    new text, ``step`` names the call (``<scope>/llm:<n>``), ``done`` is true once, at the end
    (``delta`` empty). Called on the event loop; keep it cheap. Nothing it receives is durable:
    the final text is the ``llm_call``/``agent_reply`` record. A sink that reads only some
    instances' tokens is a :class:`SelectiveReplyTokenSink`."""

    def __call__(self, instance_id: str, step: str, delta: str, done: bool) -> None: ...


@runtime_checkable
class SelectiveReplyTokenSink(ReplyTokenSink, Protocol):
    """A token sink that says which instances it reads: a call of an instance it does not want is
    not streamed (a streamed call costs more CPU than a plain one, for nothing when no one reads
    the tokens). A plain callable sink wants every instance."""

    def wants(self, instance_id: str) -> bool: ...


@dataclass
class ExecutionSlot:
    """A resource an instance's execution opens on first use and closes when it ends (``value``
    ``None`` meanwhile): what the frozen services hold for it."""

    value: Any = None


@dataclass(frozen=True)
class InstanceServices:
    """The services of one instance, built once when it starts and never changed. ``llm`` may be
    settings: the agent state then builds a client once per instance, in the instance's cache
    (``None``: the process-wide default client)."""

    identity: Identity = field(default_factory=Identity)
    llm: "LLMClient | LLMSettings | None" = None
    chat_memory: ChatMemoryService | None = None
    long_term_memory: "LongTermMemoryService | None" = None
    reply_tokens: ReplyTokenSink | None = None
    tasks: "TaskStore | None" = None  # usertask states (specs/states-human.md)
    agent_callbacks: "AgentCallbacks | None" = None  # asynchronous aiagentproxy states (ibid. §7)
    #: the instance's MCP connections (xflow_runtime.mcp.connections), opened on first use and
    #: closed when the instance's execution ends: the one mutable slot of these frozen services
    mcp: "ExecutionSlot" = field(default_factory=lambda: ExecutionSlot())
    #: in-process MCP servers (the SDK's ``MCPServer``/``Server`` objects) by ``mcpServers`` name:
    #: they replace that server's transport (embedding, tests; specs/mcp.md)
    mcp_servers: "Mapping[str, Any] | None" = None
    a2a: "A2ASettings | None" = None  # push callbacks of aiagentproxy over A2A (specs/a2a.md)

    @classmethod
    def of(cls, value: "InstanceServices | Mapping[str, Any] | None") -> "InstanceServices":
        """Accepts the object itself or a mapping with the same keys (``run_workflow(services=
        {"llm": client})``); an unknown key is a mistake, reported as one."""
        if isinstance(value, InstanceServices):
            return value
        value = dict(value or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise TypeError(f"unknown service(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        value["identity"] = Identity.of(value.get("identity"))
        return cls(**value)
