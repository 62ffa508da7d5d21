"""The group directory port and the transitive expansion of a caller's principals."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Protocol

from acl.model import EVERYONE, validate_principal


class GroupDirectory(Protocol):
    """Who is a direct member of which group."""

    def memberships(self, store_id: str | None = None) -> Mapping[str, frozenset[str]]:
        """Map every member principal to the groups it is a direct member of.

        With ``store_id``: the memberships that hold for that store's documents
        (the global directory plus that store's own manifest groups).
        """
        ...

    def groups_of(self, members: Collection[str], store_id: str | None = None) -> Mapping[str, frozenset[str]]:
        """The direct groups of ``members`` only, by the rule of ``memberships``: what a question's principal
        expansion reads, so its cost follows the caller's groups, not the size of the directory."""
        ...


class GroupSource(Protocol):
    """A directory outside DocQA (LDAP, Active Directory): the groups a principal is a member of, read when
    asked. It may raise ``Unavailable``; a caller whose groups cannot be read is refused, never let through."""

    #: How provenance names it ("ldap").
    name: str

    def parents(self, principal: str) -> frozenset[str]:
        """The groups (``group:<name>``) ``principal`` (``user:<id>`` or ``group:<name>``) is a direct
        member of; nested groups may be included. Unknown principals have none."""
        ...


def expand_principals(
    user: str,
    memberships: Mapping[str, frozenset[str]],
    asserted_groups: Iterable[str] = (),
) -> frozenset[str]:
    """The caller's principal set.

    The user, every group reachable from the user or from ``asserted_groups``
    (groups vouched for by a verified token) through nested membership, and
    ``group:everyone``. Cycles in the directory terminate.
    """
    return expand_by_level(user, lambda members: {m: memberships.get(m, frozenset()) for m in members}, asserted_groups)


def expand_by_level(
    user: str,
    groups_of: Callable[[list[str]], Mapping[str, frozenset[str]]],
    asserted_groups: Iterable[str] = (),
) -> frozenset[str]:
    """``expand_principals`` asking ``groups_of`` for one level of nesting at a time (the user and the
    asserted groups, then their groups, ...): one lookup per level, however large the directory."""
    start = [validate_principal(user), *(validate_principal(g) for g in asserted_groups)]
    seen: set[str] = set(start)
    frontier = sorted(seen)
    while frontier:
        found = groups_of(frontier)
        frontier = sorted({group for member in frontier for group in found.get(member, ())} - seen)
        seen.update(frontier)
    seen.add(EVERYONE)
    return frozenset(seen)


class MergedMemberships(Mapping[str, frozenset[str]]):
    """DocQA's own memberships and the outside directories' as one map (member → groups).

    How the sources combine: a principal is a member of a group when **any** source says so — DocQA's
    tables (manifests, admin changes, syncs) or an outside directory (LDAP) — and an admin's tombstone of the
    pair wins over every source. Names are shared: the directory's ``cn=finance`` is ``group:finance``
    (unless ``directory.ldap.group_prefix`` keeps them apart), so a manifest may allow a directory group by
    its name. A source is asked when a member is looked up (and may raise ``Unavailable``: the expansion
    fails, closed); iterating gives the tables' members only.
    """

    def __init__(
        self, base: Mapping[str, frozenset[str]], sources: Sequence[GroupSource], tombstoned: frozenset[tuple[str, str]]
    ) -> None:
        self._base = base
        self._sources = sources
        self._tombstoned = tombstoned

    def __getitem__(self, member: str) -> frozenset[str]:
        groups = set(self._base.get(member, ()))
        for source in self._sources:
            groups |= source.parents(member)
        return frozenset(g for g in groups if (g, member) not in self._tombstoned)

    def __iter__(self) -> Iterator[str]:
        return iter(self._base)

    def __len__(self) -> int:
        return len(self._base)


class InMemoryDirectory:
    """A directory held in a dict: for manifests, tests and the fakes."""

    def __init__(self, groups: Mapping[str, Iterable[str]] | None = None) -> None:
        self._parents: dict[str, set[str]] = {}
        for group, members in (groups or {}).items():
            for member in members:
                self.add(group, member)

    def add(self, group: str, member: str) -> None:
        self._parents.setdefault(validate_principal(member), set()).add(validate_principal(group))

    def remove(self, group: str, member: str) -> None:
        self._parents.get(member, set()).discard(group)

    def memberships(self, store_id: str | None = None) -> Mapping[str, frozenset[str]]:
        return {member: frozenset(groups) for member, groups in self._parents.items()}

    def groups_of(self, members: Collection[str], store_id: str | None = None) -> Mapping[str, frozenset[str]]:
        return {member: frozenset(self._parents.get(member, ())) for member in members}
