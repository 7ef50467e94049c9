"""Every error code a workflow can see, in one catalogue.

A code is what ``onErrors`` (an error definition's ``code``) and ``retries`` match, and what
``result.error["code"]`` reports. The values are a public contract — workflows match on them — so
they keep the spelling each was published with, in three casings: camelCase for the runtime's own
Serverless Workflow semantics, PascalCase for effects and agent states (an exception class name
reads the same way), and lowercase where SW 0.8 or SonataFlow spelled it so (``timeout``). Never
change a value; add a code here before raising it anywhere.

Besides these, a code can be: an HTTP status as text (``"503"``, REST/OpenAPI/GraphQL functions and
LLM providers), an LLM provider's error kind (:mod:`xflow_runtime.llm.errors`), or the class name
of an exception raised by a custom function or an expression (``ExpressionTimeout``,
``ExpressionTooLarge``). Which failure type carries which code, and where it arises:
``specs/architecture.md``, "Failures".
"""

from __future__ import annotations

from typing import Final

# --- the interpreter (specs/semantics.md) --------------------------------------------------------
#: A state, action, event wait or workflow ran out of time (``timeouts``; also LLM calls, HTTP
#: calls, agent and user-task waits).
TIMEOUT: Final = "timeout"
#: The workflow input is not a JSON object.
INVALID_INPUT: Final = "invalidInput"
#: The workflow input or output does not match its ``dataInputSchema`` / output schema.
VALIDATION: Final = "validation"
#: A ``foreach`` state's ``inputCollection`` is not an array.
INVALID_INPUT_COLLECTION: Final = "invalidInputCollection"
#: No handler for the state's type (a compiler was registered without one).
UNSUPPORTED_STATE: Final = "unsupportedState"
#: A ``subFlowRef`` names a workflow that is not registered.
SUBFLOW_NOT_FOUND: Final = "subflowNotFound"
#: A function has neither a registered callable nor an invoker.
FUNCTION_NOT_IMPLEMENTED: Final = "functionNotImplemented"
#: A switch without ``defaultCondition`` matched no condition (SonataFlow compatibility).
NO_CONDITION_MATCHED: Final = "NoConditionMatched"
#: A state's ``metadata.errorMessage`` gave a message (SonataFlow compatibility).
ERROR_MESSAGE: Final = "errorMessage"

# --- the engines (specs/durability.md) -----------------------------------------------------------
#: In-process: the instance waits for an event or input that can never arrive, with no timer pending.
STALLED: Final = "stalled"
#: Durable: the instance's process ended too many times while running it; it is parked.
PROCESS_CRASHED: Final = "ProcessCrashed"

# --- functions (specs/functions.md) --------------------------------------------------------------
#: The function's target (Python callable, OpenAPI operation, SonataFlow service) does not exist.
FUNCTION_NOT_FOUND: Final = "FunctionNotFound"
#: The arguments do not fit the callable or the operation's parameters.
INVALID_ARGUMENTS: Final = "InvalidArguments"
#: A custom function returned something that is not JSON.
INVALID_RESULT: Final = "InvalidResult"
#: An OpenAPI document or REST function definition cannot be used.
CONFIGURATION_ERROR: Final = "ConfigurationError"
#: The function's type is not supported by this runtime.
NOT_SUPPORTED: Final = "NotSupported"
#: Authentication for a function call failed (``auth`` definitions).
AUTH_ERROR: Final = "AuthError"
#: The HTTP server of a function cannot be reached.
CONNECT_ERROR: Final = "ConnectError"
#: A GraphQL response carries ``errors``.
GRAPHQL_ERROR: Final = "GraphQLError"

# --- LLM calls (specs/llm.md) --------------------------------------------------------------------
#: The LLM provider cannot be reached.
CONNECTION: Final = "connection"

# --- agent states (specs/agent.md, specs/states-human.md) ----------------------------------------
#: No outcome matched and the state has no transition or end.
AGENT_NO_OUTCOME: Final = "AgentNoOutcome"
#: The model's structured output does not match ``output`` after the allowed retries.
AGENT_OUTPUT_INVALID: Final = "AgentOutputInvalid"
#: A user message sent to a waiting agent is not text.
AGENT_MESSAGE_INVALID: Final = "AgentMessageInvalid"
#: A user-proxy agent's known data does not match its schema.
AGENT_KNOWN_DATA_INVALID: Final = "AgentKnownDataInvalid"
#: An outcome's ``dataFilter`` produced data that cannot be merged.
AGENT_OUTCOME_DATA_INVALID: Final = "AgentOutcomeDataInvalid"
#: An agent proxy's execution returned no result.
AGENT_PROXY_NO_RESULT: Final = "AgentProxyNoResult"
#: An ``aiagentproxy`` agent acknowledged (asynchronous mode) but the runtime takes no callbacks.
AGENT_PROXY_NO_CALLBACK: Final = "AgentProxyNoCallback"
#: A state enables long-term memory on a runtime without a database for it.
LONG_TERM_MEMORY_UNAVAILABLE: Final = "LongTermMemoryUnavailable"
#: A prompt template failed, or was refused by the sandbox.
TEMPLATE_ERROR: Final = "TemplateError"
TEMPLATE_SECURITY_ERROR: Final = "TemplateSecurityError"

# --- user tasks (specs/states-human.md) ----------------------------------------------------------
#: The task's fields (people, due date, form) evaluate to something unusable.
TASK_INVALID: Final = "TaskInvalid"
#: The completion's data does not match the task's schema.
TASK_DATA_INVALID: Final = "TaskDataInvalid"
#: No outcome matched the completion and the state has no transition or end.
TASK_NO_OUTCOME: Final = "TaskNoOutcome"
#: The task was deleted while the instance waited (and the state has no ``onDelete``).
TASK_DELETED: Final = "taskDeleted"


# --- MCP servers (specs/mcp.md) -----------------------------------------------------------------
#: ``tools/call`` answered with ``isError: true`` (a function's failure; an agent's tool message).
MCP_TOOL_ERROR: Final = "MCPToolError"
#: A JSON-RPC error from the server (``details.code`` holds the numeric code).
MCP_PROTOCOL_ERROR: Final = "MCPProtocolError"
#: No answer within the server's ``timeout``; the request was cancelled.
MCP_TIMEOUT: Final = "MCPTimeout"
#: The server could not be started or reached, or its handshake failed.
MCP_UNAVAILABLE: Final = "MCPUnavailable"
#: ``structuredContent`` missing or not matching the tool's ``outputSchema``.
MCP_OUTPUT_INVALID: Final = "MCPOutputInvalid"
#: The server asked for user input where nobody can answer (a function call, not an agent).
MCP_INPUT_REQUIRED: Final = "MCPInputRequired"
#: The ``mcp`` extra is not installed.
MCP_NOT_INSTALLED: Final = "MCPNotInstalled"
#: An HTTP server refused the credentials (HTTP 401 or 403).
MCP_UNAUTHORIZED: Final = "MCPUnauthorized"
#: A tool named in the definition is not offered by the server.
MCP_TOOL_NOT_FOUND: Final = "MCPToolNotFound"

# --- A2A agents (specs/a2a.md §4) ----------------------------------------------------------------
A2A_TASK_FAILED: Final = "A2ATaskFailed"
A2A_TASK_REJECTED: Final = "A2ATaskRejected"
A2A_TASK_CANCELED: Final = "A2ATaskCanceled"
A2A_AUTH_REQUIRED: Final = "A2AAuthRequired"
#: The agent needs input and no outcome routes ``$agentOutcome.status == "input-required"``.
A2A_INPUT_REQUIRED: Final = "A2AInputRequired"
A2A_PROTOCOL_ERROR: Final = "A2AProtocolError"
A2A_UNAVAILABLE: Final = "A2AUnavailable"
#: Push mode asked for, but the runtime has no callback settings or the card offers no push.
A2A_PUSH_UNAVAILABLE: Final = "A2APushUnavailable"
#: The ``a2a`` extra is not installed.
A2A_NOT_INSTALLED: Final = "A2ANotInstalled"


def catalogue() -> dict[str, str]:
    """Every code above, by constant name (for documentation and the test that pins the values)."""
    return {name: value for name, value in globals().items()
            if name.isupper() and isinstance(value, str)}
