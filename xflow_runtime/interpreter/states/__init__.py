"""Handlers of the eight SW 0.8 state types, named in :mod:`xflow_runtime.state_types`."""
