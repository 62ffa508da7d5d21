"""The group directory port and the transitive expansion of a caller's principals."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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
