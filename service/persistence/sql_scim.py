"""What an identity provider provisioned over SCIM 2.0, in the settings database.

``scim_resources`` holds each User and Group as its SCIM JSON; ``scim_state`` one generation number that every
write raises, so that each replica knows when to read the resources again; ``scim_tokens`` the SHA-256 of each
bearer token an admin issued (``docqa scim token``). A write stores the resource and rebuilds the memberships
the SCIM groups state (source ``scim`` in ``memberships``) in one transaction, so that a query never sees a
group without its members or members of a deleted group; an admin's tombstone wins over them as over any source.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from datetime import datetime

from sqlalchemy import DateTime, Integer, String, Text, delete, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker

from service.persistence.ports import GLOBAL_SCOPE
from service.persistence.sql_base import Base, transaction
from service.persistence.sql_memberships import MembershipRow

#: The ``source`` of the membership rows SCIM groups state.
SCIM_SOURCE = "scim"


class ScimResourceRow(Base):
    __tablename__ = "scim_resources"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    resource_type: Mapped[str] = mapped_column(String(32))
    body: Mapped[str] = mapped_column(Text)


class ScimStateRow(Base):
    __tablename__ = "scim_state"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    generation: Mapped[int] = mapped_column(Integer)


class ScimTokenRow(Base):
    __tablename__ = "scim_tokens"
    token_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_by: Mapped[str] = mapped_column(String(300))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class SqlScimRows:
    """The SCIM tables of the settings database (its engine, its migrations)."""

    def __init__(self, engine: Engine) -> None:
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    def _session(self) -> AbstractContextManager[Session]:
        return transaction(self._sessions)

    def generation(self) -> int:
        with self._session() as s:
            return s.scalar(select(ScimStateRow.generation).where(ScimStateRow.id == 1)) or 0

    def resources(self) -> tuple[int, list[tuple[str, str]]]:
        """The generation and every stored (resource type, JSON body), read in one transaction."""
        with self._session() as s:
            generation = s.scalar(select(ScimStateRow.generation).where(ScimStateRow.id == 1)) or 0
            rows = s.execute(select(ScimResourceRow.resource_type, ScimResourceRow.body).order_by(ScimResourceRow.id))
            return generation, [(t, b) for t, b in rows]

    def write(
        self,
        stored: Mapping[str, tuple[str, str]],
        removed: Iterable[str],
        memberships: Iterable[tuple[str, str]],
    ) -> int:
        """Store ``stored`` (id → (type, body)), drop ``removed``, make ``memberships`` ((group, member)
        pairs) the SCIM source's whole set, and raise the generation; returns the new generation."""
        with self._session() as s:
            for resource_id, (resource_type, body) in stored.items():
                s.merge(ScimResourceRow(id=resource_id, resource_type=resource_type, body=body))
            gone = list(removed)
            if gone:
                s.execute(delete(ScimResourceRow).where(ScimResourceRow.id.in_(gone)))
            s.execute(
                delete(MembershipRow).where(MembershipRow.scope == GLOBAL_SCOPE, MembershipRow.source == SCIM_SOURCE)
            )
            s.add_all(
                [
                    MembershipRow(group=g, member=m, scope=GLOBAL_SCOPE, source=SCIM_SOURCE)
                    for g, m in sorted(set(memberships))
                ]
            )
            state = s.get(ScimStateRow, 1)
            if state is None:
                state = ScimStateRow(id=1, generation=0)
                s.add(state)
            state.generation += 1
            return state.generation

    # bearer tokens ------------------------------------------------------------------------------
    def add_token(self, token: str, created_by: str, created_at: datetime) -> None:
        with self._session() as s:
            s.add(ScimTokenRow(token_sha256=_digest(token), created_by=created_by, created_at=created_at))

    def revoke_tokens(self) -> int:
        with self._session() as s:
            return int(s.execute(delete(ScimTokenRow)).rowcount)  # type: ignore[attr-defined]

    def token_valid(self, token: str) -> bool:
        digest = _digest(token)
        with self._session() as s:
            known = list(s.scalars(select(ScimTokenRow.token_sha256)))
        return any(hmac.compare_digest(digest, k) for k in known)
