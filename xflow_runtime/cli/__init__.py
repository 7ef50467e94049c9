"""Command-line interface (``xflow``)."""
