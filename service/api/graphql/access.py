"""GraphQL types and resolvers of access state: a document's ACL with its provenance, admin changes (admin only)."""

from __future__ import annotations

from typing import Any

import strawberry

from acl.errors import InvalidArgument
from acl.model import Acl
from service.access.authorized import AuthorizedAdmin
from service.access.explain import Explanation, Principal
from service.access.explain_query import QueryExplanation
from service.access.state import AclView
from service.bootstrap import App
from service.persistence.ports import ADMIN_SOURCE
from service.security.tokens import Identity


@strawberry.type(description="Principals ('user:<id>', 'group:<id>') allowed and denied; deny wins.")
class AclEntries:
    allow: list[str]
    deny: list[str]

    @staticmethod
    def of(acl: Acl) -> AclEntries:
        return AclEntries(allow=sorted(acl.allow), deny=sorted(acl.deny))


@strawberry.type(description="A document's effective ACL, its source, and the source's ACL when an admin's differs.")
class DocumentAcl:
    store_id: str
    document_id: str
    allow: list[str]
    deny: list[str]
    source: str = strawberry.field(description="admin | manifest | api")
    changed_by: str | None = strawberry.field(description="With source admin: who changed it.")
    changed_at: str | None = strawberry.field(description="With source admin: when (ISO 8601, UTC).")
    source_acl: AclEntries | None = strawberry.field(
        description="With source admin: the manifest's (or push's) ACL, when it differs."
    )

    @staticmethod
    def of(view: AclView) -> DocumentAcl:
        admin = view.source == ADMIN_SOURCE
        differs = admin and view.ingested is not None and view.ingested != view.effective
        return DocumentAcl(
            store_id=view.store_id,
            document_id=view.document_id,
            allow=sorted(view.effective.allow),
            deny=sorted(view.effective.deny),
            source=view.source,
            changed_by=view.changed_by if admin else None,
            changed_at=view.changed_at.isoformat() if admin and view.changed_at else None,
            source_acl=AclEntries.of(view.ingested) if differs and view.ingested is not None else None,
        )


@strawberry.type(description="One link of a chain: member is in group because source says so.")
class MembershipLink:
    member: str
    group: str
    source: str = strawberry.field(
        description="admin, scim, manifest of store <id>, the directory's name (ldap), everyone, or a sync's name."
    )


@strawberry.type(description="A principal the user holds and the chain of memberships that gives it.")
class HeldPrincipal:
    principal: str
    path: str = strawberry.field(description="The chain as one line: user:carol → group:a (ldap) → group:b (admin).")
    chain: list[MembershipLink] = strawberry.field(description="Empty for the user itself.")


@strawberry.type(description="A chunk of the admin's search and whether the explained user would see it.")
class ExplainedChunk:
    chunk_id: str
    document_id: str
    score: float | None = strawberry.field(description="Its raw score in the admin's search.")
    relevance: float | None = strawberry.field(
        description="Its relevance on the store's 0-1 scale (after the store's rerank, whose order the chunks keep)."
    )
    visible: bool = strawberry.field(description="Whether the user may read its document (the document form's answer).")
    deciding_entry: str | None = strawberry.field(
        description="The entry of its document's ACL that decided ('deny group:x' or 'allow user:y'); null when none "
        "allows."
    )
    reason: str


@strawberry.type(
    description="Why a user can or cannot read a document, or, for a question, which of the admin's top chunks the "
    "user would see (the directory's view: not a token's groups). The document fields are null for a question; "
    "chunks is null for a document."
)
class AccessExplanation:
    user_id: str
    store_id: str
    document_id: str | None
    readable: bool | None
    reason: str | None
    deciding_entry: str | None = strawberry.field(
        description="The entry that decided ('deny group:x' or 'allow user:y'; deny wins); null when none allows."
    )
    acl: DocumentAcl | None
    principals: list[HeldPrincipal]
    chunks: list[ExplainedChunk] | None = strawberry.field(
        default=None,
        description="For a question: the admin's own top chunks (only what the admin may read), best first, each "
        "with whether the user would see it.",
    )

    @staticmethod
    def of(result: Explanation) -> AccessExplanation:
        return AccessExplanation(
            user_id=result.user,
            store_id=result.acl.store_id,
            document_id=result.acl.document_id,
            readable=result.readable,
            reason=result.reason,
            deciding_entry=result.deciding,
            acl=DocumentAcl.of(result.acl),
            principals=_held(result.principals),
        )

    @staticmethod
    def of_question(result: QueryExplanation) -> AccessExplanation:
        return AccessExplanation(
            user_id=result.user,
            store_id=result.store_id,
            document_id=None,
            readable=None,
            reason=None,
            deciding_entry=None,
            acl=None,
            principals=_held(result.principals),
            chunks=[
                ExplainedChunk(
                    chunk_id=c.chunk_id,
                    document_id=c.document_id,
                    score=c.score,
                    relevance=c.relevance,
                    visible=c.visible,
                    deciding_entry=c.explanation.deciding,
                    reason=c.explanation.reason,
                )
                for c in result.chunks
            ],
        )


def _held(principals: tuple[Principal, ...]) -> list[HeldPrincipal]:
    return [
        HeldPrincipal(
            principal=p.principal,
            path=p.path(),
            chain=[MembershipLink(member=k.member, group=k.group, source=k.source) for k in p.chain],
        )
        for p in principals
    ]


def _admin(app: App, identity: Identity) -> AuthorizedAdmin:
    """The admin operations for this caller: each refuses a non-admin (FORBIDDEN)."""
    return app.admin_for(identity, f"graphql:{identity.user_id}")


def document_acl(app: App, identity: Identity, document_id: str, store_id: str | None) -> DocumentAcl:
    return DocumentAcl.of(_admin(app, identity).acl_view(document_id, store_id))


def explain_access(
    app: App,
    identity: Identity,
    user_id: str,
    document_id: str | None,
    store_id: str | None,
    question: str | None = None,
) -> AccessExplanation:
    admin = _admin(app, identity)
    if question is None:
        if document_id is None:
            raise InvalidArgument("give documentId or question")
        result = admin.explain_access(user_id, document_id, store_id, by=identity.user_id, interface="graphql")
        return AccessExplanation.of(result)
    if document_id is not None or store_id is None:
        raise InvalidArgument("a question needs storeId and no documentId")
    searched = admin.explain_question(
        user_id, store_id, question, identity.caller(), by=identity.user_id, interface="graphql"
    )
    return AccessExplanation.of_question(searched)


def set_document_acl(
    app: App, identity: Identity, document_id: str, allow: list[str], deny: list[str], store_id: str | None
) -> DocumentAcl:
    return DocumentAcl.of(_admin(app, identity).set_acl(document_id, allow, deny, store_id))


def reset_document_acl(app: App, identity: Identity, document_id: str, store_id: str | None) -> DocumentAcl:
    return DocumentAcl.of(_admin(app, identity).reset_acl(document_id, store_id))


def change_member(app: App, identity: Identity, action: str, group: str, member: str) -> bool:
    """``add``: a global admin membership; ``remove``: a tombstone; ``reset``: back to the manifests."""
    return _admin(app, identity).change_member(action, group, member)


def update_settings(app: App, identity: Identity, store_id: str, changes: dict[str, Any]) -> None:
    """Change a store's settings (admin only)."""
    _admin(app, identity).update_settings(store_id, changes)
