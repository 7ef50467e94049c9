"""Provider failures → :class:`~xflow_runtime.errors.WorkflowError` codes ``onErrors`` understands.

=====================================  ==================  ========
litellm exception                      ``code``            ``status``
=====================================  ==================  ========
``Timeout``                            ``"timeout"``       408
``APIConnectionError`` (no response)   ``"connection"``    None
any other with an HTTP status          ``"<status>"``      status
anything else                          class name          None
=====================================  ==================  ========

``details`` carries ``provider``, ``model`` and ``kind`` (litellm's exception class name, e.g.
``RateLimitError``, ``ContextWindowExceededError``). Messages are the provider's own words
without litellm's prefixes; they never contain the API key (litellm never echoes it).
"""

from __future__ import annotations

import re

from xflow_runtime.error_codes import CONNECTION, TIMEOUT
from xflow_runtime.errors import WorkflowError

_LITELLM_PREFIX = re.compile(r"^(litellm\.\w+:\s*)+(\w+Exception - )?")


def provider_error(error: BaseException, model: str) -> WorkflowError:
    """The workflow error for ``error`` raised by litellm while calling ``model``."""
    if isinstance(error, WorkflowError):
        return error
    kind = type(error).__name__
    provider = getattr(error, "llm_provider", None) or (model.split("/", 1)[0] if "/" in model else "openai")
    details = {"provider": provider, "model": model, "kind": kind}
    text = _LITELLM_PREFIX.sub("", str(getattr(error, "message", None) or error)).strip() or kind
    if kind == "Timeout" or isinstance(error, TimeoutError):
        return WorkflowError(f"LLM call to {model} timed out: {text}", code=TIMEOUT, status=408, details=details)
    if kind == "APIConnectionError":
        return WorkflowError(f"cannot reach the LLM provider for {model}: {text}", code=CONNECTION, details=details)
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return WorkflowError(f"LLM call to {model} failed with HTTP {status}: {text}", code=str(status),
                             status=status, details=details)
    return WorkflowError(f"LLM call to {model} failed ({kind}): {text}", code=kind, details=details)
