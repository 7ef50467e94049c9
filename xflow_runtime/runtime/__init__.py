"""The embedding API (:class:`Runtime`, :func:`run_sync`) and its parts: ``core`` (the public
class), ``blocking`` (``run_sync``), ``execution`` (the joints to the interpreter), ``handles``
(instance handles, workflow records), ``memory`` (where chat memory lives)."""

from xflow_runtime.runtime.blocking import run_sync
from xflow_runtime.runtime.core import EngineName, EventListener, Runtime
from xflow_runtime.runtime.handles import InstanceHandle, UnknownInstance, WorkflowRef

__all__ = ["EngineName", "EventListener", "InstanceHandle", "Runtime", "UnknownInstance",
           "WorkflowRef", "run_sync"]
