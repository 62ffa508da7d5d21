"""Ports of the settings database and their SQLAlchemy adapters, with Alembic migrations."""
