"""Why can (or can't) this user read that document: ``docqa access explain``.

The answer is read from the same places a query reads: the document's effective ACL (an admin override, or
what its manifest or the pushing system gave it) and the user's principals — the user, every group reached
through nested membership in DocQA's tables (admin changes, the store's manifest, syncs) and the outside
directories (LDAP), minus the pairs an admin tombstoned, and ``group:everyone``. Each principal comes with
the chain that gives it and the source of each link; the decision names the entry that decided it (deny
wins). Groups a token vouches for are not known here: the explanation is the directory's view of the user.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from acl.directory import GroupSource
from acl.model import EVERYONE, user_principal
from service.access.state import AclView
from service.persistence.ports import GLOBAL_SCOPE, AuditRecord, SettingsRepository

#: The audit trail's class of an explanation an admin read through the servers.
EXPLAIN_AUDIT_CLASS = "explain_access"


@dataclass(frozen=True, slots=True)
class Link:
    """``member`` is in ``group`` because ``source`` says so (``admin``, ``manifest of store S``, ``ldap``…)."""

    member: str
    group: str
    source: str


@dataclass(frozen=True, slots=True)
class Principal:
    """One principal of the user and the links from the user to it (none for the user itself)."""

    principal: str
    chain: tuple[Link, ...]

    def path(self) -> str:
        """``user:carol → group:auditors (ldap) → group:finance (ldap)``."""
        if not self.chain:
            return self.principal
        return " → ".join([self.chain[0].member, *(f"{link.group} ({link.source})" for link in self.chain)])


@dataclass(frozen=True, slots=True)
class Explanation:
    user: str
    acl: AclView
    principals: tuple[Principal, ...]
    readable: bool
    #: The entry that decided: ``deny user:alice`` / ``allow group:finance``; None when no entry allows.
    deciding: str | None

    @property
    def reason(self) -> str:
        if self.deciding is None:
            return "no entry of the document's ACL names any of the user's principals"
        effect, principal = self.deciding.split(" ", 1)
        chain = next(p for p in self.principals if p.principal == principal)
        verb = "denies" if effect == "deny" else "allows"
        return f"the ACL {verb} {principal}, which the user holds as {chain.path()}" + (
            " (deny wins over every allow)" if effect == "deny" else ""
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "store": self.acl.store_id,
            "document_id": self.acl.document_id,
            "readable": self.readable,
            "deciding_entry": self.deciding,
            "reason": self.reason,
            "acl": self.acl.to_dict(),
            "principals": [
                {
                    "principal": p.principal,
                    "path": p.path(),
                    "chain": [{"member": k.member, "group": k.group, "source": k.source} for k in p.chain],
                }
                for p in self.principals
            ],
        }


def explain(repository: SettingsRepository, sources: Sequence[GroupSource], user_id: str, acl: AclView) -> Explanation:
    """Whether ``user_id`` may read the document of ``acl``, with the principals and the deciding entry."""
    return decide(user_id, acl, principals_of(repository, sources, user_id, acl.store_id))


def principals_of(
    repository: SettingsRepository, sources: Sequence[GroupSource], user_id: str, store_id: str
) -> tuple[Principal, ...]:
    """Every principal ``user_id`` holds in ``store_id``, each with a shortest chain that gives it."""
    return _principals(repository, sources, user_principal(user_id), store_id)


def decide(user_id: str, acl: AclView, principals: tuple[Principal, ...]) -> Explanation:
    """The decision for the document of ``acl`` and the user holding ``principals`` (deny wins)."""
    held = frozenset(p.principal for p in principals)
    denied = sorted(acl.effective.deny & held)
    allowed = sorted(acl.effective.allow & held)
    deciding = f"deny {denied[0]}" if denied else (f"allow {allowed[0]}" if allowed else None)
    return Explanation(user_id, acl, principals, acl.effective.permits(held), deciding)


@dataclass(frozen=True, slots=True)
class AccessExplainer:
    """The servers' ``explainAccess`` / ``ExplainAccess``: an explanation, and its audit row (who asked, over
    which interface, for which document). The admin check is the caller's (``AuthorizedAdmin``)."""

    repository: SettingsRepository
    sources: Sequence[GroupSource]
    #: A document's ACL view (NotFound for an unknown document, or an id several stores hold without a store).
    acl_view: Callable[[str, str | None], AclView]

    def explain(self, user_id: str, document_id: str, store_id: str | None, *, by: str, interface: str) -> Explanation:
        """Why ``user_id`` (``alice`` or ``user:alice``) can or cannot read ``document_id``. InvalidArgument for a
        malformed user id, before anything is read; the audit row is written before the answer is returned, so
        an explanation the audit trail cannot record is not given."""
        user = user_id.removeprefix("user:")
        user_principal(user)
        acl = self.acl_view(document_id, store_id)
        result = explain(self.repository, self.sources, user, acl)
        self.repository.record_audit(
            AuditRecord(
                query_id=str(uuid.uuid4()),
                user_id=by,
                store_id=acl.store_id,
                query_class=EXPLAIN_AUDIT_CLASS,
                document_ids=(acl.document_id,),
                chunk_ids=(),
                threshold=None,
                timings_ms={},
                outcome="OK",
                interface=interface,
                created_at=datetime.now(UTC),
                document_count=1,
                chunk_count=0,
            )
        )
        return result


def _principals(
    repository: SettingsRepository, sources: Sequence[GroupSource], user: str, store_id: str
) -> tuple[Principal, ...]:
    """Every principal reached from ``user`` (breadth first, so each with a shortest chain)."""
    tombstoned = {(t.group, t.member) for t in repository.tombstones()}
    rows: dict[str, list[Link]] = {}
    for row in repository.membership_records():
        if row.scope not in (GLOBAL_SCOPE, store_id) or (row.group, row.member) in tombstoned:
            continue
        said_by = row.source if row.scope == GLOBAL_SCOPE else f"{row.source} of store {store_id}"
        rows.setdefault(row.member, []).append(Link(row.member, row.group, said_by))
    found: dict[str, Principal] = {user: Principal(user, ())}
    queue = deque([user])
    while queue:
        member = queue.popleft()
        links = list(rows.get(member, ()))
        for source in sources:
            links += [Link(member, g, source.name) for g in sorted(source.parents(member))]
        for link in links:
            if link.group not in found and (link.group, member) not in tombstoned:
                found[link.group] = Principal(link.group, (*found[member].chain, link))
                queue.append(link.group)
    if EVERYONE not in found:
        found[EVERYONE] = Principal(EVERYONE, (Link(user, EVERYONE, "everyone"),))
    return tuple(found.values())
