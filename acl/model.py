"""Principals and access-control lists."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from acl.errors import InvalidArgument

EVERYONE = "group:everyone"

# Checked whole with fullmatch: ``match`` with ``$`` would let "user:alice\n" through.
_PRINCIPAL = re.compile(r"(user|group):[A-Za-z0-9._@+\-]{1,200}")


def validate_principal(principal: str) -> str:
    """Return ``principal`` unchanged if it is ``user:<id>`` or ``group:<id>``."""
    if not isinstance(principal, str) or _PRINCIPAL.fullmatch(principal) is None:
        raise InvalidArgument(
            f"invalid principal {principal!r}: expected 'user:<id>' or 'group:<id>' (letters, digits and . _ @ + -)"
        )
    return principal


def user_principal(user_id: str) -> str:
    """The principal of a user id such as ``alice`` → ``user:alice``."""
    return validate_principal(f"user:{user_id}")


@dataclass(frozen=True, slots=True)
class Acl:
    """Allow and deny principals of a document. Deny wins."""

    allow: frozenset[str] = field(default_factory=frozenset)
    deny: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, allow: Iterable[str] = (), deny: Iterable[str] = ()) -> Acl:
        """Build a validated ACL from any iterables of principal strings."""
        return cls(
            frozenset(validate_principal(p) for p in allow),
            frozenset(validate_principal(p) for p in deny),
        )

    def permits(self, principals: frozenset[str]) -> bool:
        """True iff ``principals`` meets ``allow`` and does not meet ``deny``."""
        return not self.allow.isdisjoint(principals) and self.deny.isdisjoint(principals)

    def to_dict(self) -> dict[str, list[str]]:
        return {"allow": sorted(self.allow), "deny": sorted(self.deny)}


NOBODY = Acl()
