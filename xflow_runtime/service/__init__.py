"""The HTTP service over :class:`~xflow_runtime.runtime.Runtime` (FastAPI; imported only by
``xflow serve`` and by embedders). Decisions: ``specs/service.md``."""

from xflow_runtime.service.app import create_app, service_lifespan
from xflow_runtime.service.state import ServiceOptions

__all__ = ["ServiceOptions", "create_app", "service_lifespan"]
