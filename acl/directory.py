"""The group directory port and the transitive expansion of a caller's principals."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
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
    start = [validate_principal(user), *(validate_principal(g) for g in asserted_groups)]
    seen: set[str] = set(start)
    frontier = list(start)
    while frontier:
        principal = frontier.pop()
        for group in memberships.get(principal, ()):
            if group not in seen:
                seen.add(group)
                frontier.append(group)
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
