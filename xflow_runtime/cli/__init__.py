"""Command-line interface (``xflow``): the command is the interface; no Python API here."""

__all__: list[str] = []
