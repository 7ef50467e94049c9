"""``--secrets-file FILE``: a JSON/YAML object, or a ``.env`` file read by python-dotenv.

A ``.env`` file means what it means to every other tool that reads one (python-dotenv, the
reference of the format): quotes are removed, ``export KEY=…`` defines ``KEY``, an inline
`` # comment`` after a value is dropped, double-quoted escapes (``\\n``, ``\\"``) are applied and
``${NAME}`` expands an earlier key (or the environment). A line dotenv cannot parse, or a key
without ``=``, is refused with its line number, neither the line nor the word echoed (it may hold a secret).
python-dotenv is imported only when a file is given (not on the ``xflow run`` start-up path).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from xflow_runtime.errors import XFlowError


class SecretsFileError(XFlowError):
    """The secrets file cannot be read or parsed (a usage error, exit code 2)."""


def read_secrets_file(path: str) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise SecretsFileError(f"cannot read secrets file {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise SecretsFileError(f"secrets file {path} is not UTF-8 text") from None
    stripped = text.lstrip()
    if stripped.startswith("{") or _looks_like_yaml(stripped):
        mapping = _yaml_mapping(text)
        if mapping is not None:
            return mapping
    return parse_dotenv(text, path)


def parse_dotenv(text: str, where: str) -> dict[str, Any]:
    from dotenv import dotenv_values
    from dotenv.parser import parse_stream

    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            raise SecretsFileError(f"{where}:{binding.original.line}: expected NAME=VALUE")
        if binding.key is not None and binding.value is None:
            # not named: a bare word may be the secret itself, pasted without its name
            raise SecretsFileError(f"{where}:{binding.original.line}: expected NAME=VALUE (no '=')")
    return dict(dotenv_values(stream=io.StringIO(text)))


def _looks_like_yaml(text: str) -> bool:
    """``NAME: value`` on the first line (a ``.env`` line has ``=`` before any ``:``)."""
    first = text.split("\n", 1)[0]
    colon, equals = first.find(":"), first.find("=")
    return colon != -1 and (equals == -1 or colon < equals)


def _yaml_mapping(text: str) -> dict[str, Any] | None:
    import yaml

    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    return {str(k): v for k, v in loaded.items()} if isinstance(loaded, dict) else None
