"""``AdminService.ExplainAccess``: an access explanation as its proto message."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from service.access.explain import Explanation
from service.persistence.ports import ADMIN_SOURCE


def explanation_message(admin: ModuleType, common: ModuleType, result: Explanation) -> Any:
    """``result`` as an ``ExplainAccessResponse`` (``admin``, ``common``: the generated message modules)."""
    view = result.acl
    reply = admin.ExplainAccessResponse(
        user_id=result.user,
        store_id=view.store_id,
        document_id=view.document_id,
        readable=result.readable,
        reason=result.reason,
        acl=common.Acl(allow=sorted(view.effective.allow), deny=sorted(view.effective.deny)),
        acl_source=view.source,
        principals=[
            admin.HeldPrincipal(
                principal=p.principal,
                path=p.path(),
                chain=[admin.MembershipLink(member=k.member, group=k.group, source=k.source) for k in p.chain],
            )
            for p in result.principals
        ],
    )
    if result.deciding is not None:
        reply.deciding_entry = result.deciding
    if view.source == ADMIN_SOURCE:
        reply.acl_changed_by = view.changed_by or ""
        reply.acl_changed_at = "" if view.changed_at is None else view.changed_at.isoformat()
    return reply
