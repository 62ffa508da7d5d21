"""Alembic's environment for the settings database (run by ``service.persistence.schema``, or ``alembic`` itself).

``service.persistence.schema`` hands in an open connection through ``config.attributes``;
run by hand, ``sqlalchemy.url`` in the Alembic configuration names the database.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from service.persistence.sql_settings import Base

config = context.config
target_metadata = Base.metadata


def _run_offline() -> None:
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def _run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(str(config.get_main_option("sqlalchemy.url")))
    try:
        with engine.connect() as own:
            context.configure(connection=own, target_metadata=target_metadata, render_as_batch=True)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    _run_offline()
else:
    _run_online()
