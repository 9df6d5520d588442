"""Persistence: SQLAlchemy models, engine and sessions. SQL is kept portable (SQLite, PostgreSQL)."""
