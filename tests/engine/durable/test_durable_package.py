"""The durable engine is one package, ``xflow_runtime.engine.durable`` (specs/durability.md):
importing its names module does not import DBOS, and the errors it records (pickled by DBOS)
name the package, so records written before and after the package layout load alike."""

from __future__ import annotations

import pickle
import subprocess
import sys

import xflow_runtime.engine.durable as durable


def test_names_module_does_not_import_dbos() -> None:
    code = ("import sys, xflow_runtime.engine.durable, xflow_runtime.engine.durable.names; "
            "print('dbos' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_recorded_errors_name_the_package() -> None:
    for error_type in (durable.DurableEngineError, durable.ReplayDiverged):
        recorded = pickle.dumps(error_type("boom"))
        assert b"xflow_runtime.engine.durable\x94" in recorded
        assert b"durable.engine" not in recorded and b"durable_replay" not in recorded
        loaded = pickle.loads(recorded)
        assert type(loaded) is error_type and str(loaded) == "boom"


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        durable.NoSuchThing  # type: ignore[attr-defined]
    except AttributeError as error:
        assert "NoSuchThing" in str(error)
    else:
        raise AssertionError("expected AttributeError")
