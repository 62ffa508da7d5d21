"""The group directory's tables of the SQL settings repository: memberships (global and per store, with where
each came from) and an administrator's tombstones; ``SqlMembershipRows`` is mixed into ``SqlAccessRows``. The rules
that decide *when* these rows change live in ``service.access.state``, the only caller of the writing methods.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime

from sqlalchemy import DateTime, Index, Select, String, and_, delete, exists, select
from sqlalchemy.orm import InstrumentedAttribute, Mapped, Session, mapped_column

from acl.directory import GroupSource, MergedMemberships
from acl.errors import InvalidArgument
from acl.model import validate_principal
from service.persistence.ports import ADMIN_SOURCE, GLOBAL_SCOPE, Membership, Tombstone
from service.persistence.sql_base import Base

_BATCH = 500  # members per IN (...) clause


class MembershipRow(Base):
    __tablename__ = "memberships"
    group: Mapped[str] = mapped_column(String(210), primary_key=True)
    member: Mapped[str] = mapped_column(String(210), primary_key=True)
    scope: Mapped[str] = mapped_column(String(63), primary_key=True)  # "" = global, else a store id
    source: Mapped[str] = mapped_column(String(300), primary_key=True)  # admin | manifest | a sync's name
    changed_by: Mapped[str | None] = mapped_column(String(300), nullable=True)
    changed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # A question reads the groups of its caller (and of those groups) only: by member, not the whole table.
    __table_args__ = (Index("ix_memberships_member", "member", "scope"),)


class TombstoneRow(Base):
    __tablename__ = "membership_tombstones"
    group: Mapped[str] = mapped_column(String(210), primary_key=True)
    member: Mapped[str] = mapped_column(String(210), primary_key=True)
    removed_by: Mapped[str] = mapped_column(String(300))
    removed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _group(principal: str) -> str:
    validate_principal(principal)
    if not principal.startswith("group:"):
        raise InvalidArgument(f"{principal!r} is not a group: groups are 'group:<id>'")
    return principal


def _effective(store_id: str | None) -> Select[str, str]:
    """(group, member) of the pairs that hold for ``store_id`` (global rows, plus that store's), tombstones out."""
    scopes = [GLOBAL_SCOPE] if store_id is None else [GLOBAL_SCOPE, store_id]
    tombstoned = exists().where(TombstoneRow.group == MembershipRow.group, TombstoneRow.member == MembershipRow.member)
    # An admin row and a tombstone of one pair never coexist (``add_admin_membership`` lifts it),
    # so every row under a tombstone is a manifest's or a sync's, and none of them counts.
    return (
        select(MembershipRow.group, MembershipRow.member).where(MembershipRow.scope.in_(scopes), ~tombstoned).distinct()
    )


def _rows_of(
    s: Session, query: Select[str, str], column: InstrumentedAttribute[str], members: list[str]
) -> list[tuple[str, str]]:
    """``query``'s rows whose ``column`` is one of ``members``, ``_BATCH`` members per IN (...)."""
    return [
        (first, second)
        for i in range(0, len(members), _BATCH)
        for first, second in s.execute(query.where(column.in_(members[i : i + _BATCH])))
    ]


class SqlMembershipRows:
    """The directory half of ``SqlAccessRows`` (the repository provides ``_session``)."""

    #: Outside directories read with the tables' memberships (``use_group_sources``); none by default.
    _group_sources: tuple[GroupSource, ...] = ()

    def _session(self) -> AbstractContextManager[Session]:  # pragma: no cover - provided by the repository
        raise NotImplementedError

    def _effective_pairs(self, store_id: str | None) -> list[tuple[str, str]]:
        """(group, member) of every pair that holds."""
        with self._session() as s:
            return [(group, member) for group, member in s.execute(_effective(store_id))]

    def use_group_sources(self, sources: Sequence[GroupSource]) -> None:
        """Read users' groups from these outside directories too (``directory.ldap``), merged with the
        tables' (``acl.directory.MergedMemberships``: any source may grant, a tombstone wins)."""
        self._group_sources = tuple(sources)

    def memberships(self, store_id: str | None = None) -> Mapping[str, frozenset[str]]:
        parents: dict[str, set[str]] = {}
        for group, member in self._effective_pairs(store_id):
            parents.setdefault(member, set()).add(group)
        tables = {m: frozenset(g) for m, g in parents.items()}
        if not self._group_sources:
            return tables
        tombstoned = frozenset((t.group, t.member) for t in self.tombstones())
        return MergedMemberships(tables, self._group_sources, tombstoned)

    def groups_of(self, members: Collection[str], store_id: str | None = None) -> Mapping[str, frozenset[str]]:
        wanted = sorted(set(members))
        with self._session() as s:  # one session: the level's pairs and, with outside directories, its tombstones
            pairs = _rows_of(s, _effective(store_id), MembershipRow.member, wanted)
            tombstoned = (
                frozenset(_rows_of(s, select(TombstoneRow.group, TombstoneRow.member), TombstoneRow.member, wanted))
                if self._group_sources
                else frozenset()
            )
        parents: dict[str, set[str]] = {member: set() for member in wanted}
        for group, member in pairs:
            parents[member].add(group)
        tables = {m: frozenset(g) for m, g in parents.items()}
        if not self._group_sources:
            return tables
        merged = MergedMemberships(tables, self._group_sources, tombstoned)
        return {member: merged[member] for member in wanted}

    def group_members(self, store_id: str | None = None) -> Mapping[str, frozenset[str]]:
        members: dict[str, set[str]] = {}
        for group, member in self._effective_pairs(store_id):
            members.setdefault(group, set()).add(member)
        return {g: frozenset(m) for g, m in members.items()}

    def membership_records(self) -> list[Membership]:
        query = select(MembershipRow).order_by(
            MembershipRow.group, MembershipRow.member, MembershipRow.scope, MembershipRow.source
        )
        with self._session() as s:
            return [
                Membership(
                    r.group,
                    r.member,
                    r.scope,
                    r.source,
                    r.changed_by,
                    None if r.changed_at is None else _utc(r.changed_at),
                )
                for r in s.scalars(query)
            ]

    def tombstones(self) -> list[Tombstone]:
        with self._session() as s:
            rows = s.scalars(select(TombstoneRow).order_by(TombstoneRow.group, TombstoneRow.member))
            return [Tombstone(r.group, r.member, r.removed_by, _utc(r.removed_at)) for r in rows]

    def add_admin_membership(self, membership: Membership) -> bool:
        group, member = _group(membership.group), validate_principal(membership.member)
        with self._session() as s:
            lifted = s.execute(delete(TombstoneRow).where(TombstoneRow.group == group, TombstoneRow.member == member))
            key = (group, member, GLOBAL_SCOPE, ADMIN_SOURCE)
            if s.get(MembershipRow, key) is not None:
                return bool(lifted.rowcount)  # type: ignore[attr-defined]
            s.add(
                MembershipRow(
                    group=group,
                    member=member,
                    scope=GLOBAL_SCOPE,
                    source=ADMIN_SOURCE,
                    changed_by=membership.changed_by,
                    changed_at=membership.changed_at,
                )
            )
            return True

    def tombstone_membership(self, tombstone: Tombstone) -> bool:
        group, member = _group(tombstone.group), validate_principal(tombstone.member)
        pair = and_(MembershipRow.group == group, MembershipRow.member == member)
        with self._session() as s:
            if s.scalar(select(MembershipRow.group).where(pair).limit(1)) is None and not self._granted_outside(
                group, member
            ):
                return False
            s.execute(delete(MembershipRow).where(pair, MembershipRow.source == ADMIN_SOURCE))
            s.merge(
                TombstoneRow(
                    group=group, member=member, removed_by=tombstone.removed_by, removed_at=tombstone.removed_at
                )
            )
            return True

    def _granted_outside(self, group: str, member: str) -> bool:
        """Whether an outside directory makes ``member`` a direct member of ``group`` (so that an admin may
        tombstone a pair the directory grants)."""
        return any(group in source.parents(member) for source in self._group_sources)

    def release_membership(self, group: str, member: str) -> bool:
        with self._session() as s:
            gone = s.execute(delete(TombstoneRow).where(TombstoneRow.group == group, TombstoneRow.member == member))
            admin = s.execute(
                delete(MembershipRow).where(
                    MembershipRow.group == group, MembershipRow.member == member, MembershipRow.source == ADMIN_SOURCE
                )
            )
            return bool(gone.rowcount or admin.rowcount)  # type: ignore[attr-defined]

    def replace_memberships(self, groups: Mapping[str, Iterable[str]], *, scope: str, source: str) -> None:
        if source == ADMIN_SOURCE:
            raise InvalidArgument("admin memberships are changed one by one, never replaced")
        rows = {(_group(g), validate_principal(m)) for g, members in groups.items() for m in members}
        with self._session() as s:
            s.execute(delete(MembershipRow).where(MembershipRow.scope == scope, MembershipRow.source == source))
            s.add_all([MembershipRow(group=g, member=m, scope=scope, source=source) for g, m in sorted(rows)])
