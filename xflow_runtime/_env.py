"""Process environment defaults applied before litellm or tiktoken are imported.

litellm fetches its model cost map from the network at import unless told otherwise, and
tiktoken downloads encodings unless a cache directory holds them. litellm ships the encodings,
so point tiktoken there. Values the user already set are left alone.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

_applied = False


def apply_offline_defaults() -> None:
    global _applied
    if _applied:
        return
    _applied = True
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if "TIKTOKEN_CACHE_DIR" not in os.environ:
        spec = importlib.util.find_spec("litellm")
        if spec and spec.submodule_search_locations:
            tokenizers = Path(list(spec.submodule_search_locations)[0]) / "litellm_core_utils" / "tokenizers"
            if tokenizers.is_dir():
                os.environ["TIKTOKEN_CACHE_DIR"] = str(tokenizers)
