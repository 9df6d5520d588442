"""Alembic migrations of the service schema, shipped inside the package (`bpservice admin migrate`)."""
