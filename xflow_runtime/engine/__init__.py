"""Engines that carry out the interpreter's effects: in-process and durable (DBOS)."""

from xflow_runtime.engine.port import EnginePort

__all__ = ["EnginePort"]
