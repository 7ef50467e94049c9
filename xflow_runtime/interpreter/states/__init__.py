"""Handlers of the eight SW 0.8 state types; importing this package registers them."""

from xflow_runtime.interpreter.states import basic, events, fanout  # noqa: F401
