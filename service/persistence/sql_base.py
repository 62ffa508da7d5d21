"""The declarative base every table of the settings database is mapped on, and its one way into a transaction."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

from acl.errors import Unavailable


class Base(DeclarativeBase):
    pass


@contextmanager
def transaction(sessions: sessionmaker[Session]) -> Iterator[Session]:
    """A session in one transaction, committed on leaving; a database that cannot be reached is Unavailable."""
    try:
        with sessions.begin() as session:
            yield session
    except OperationalError as exc:
        raise Unavailable(f"settings database unavailable: {exc.orig.__class__.__name__}") from None
