"""The admin use cases on behalf of one caller, as the servers call them.

Each method first asks ``service.domain.authorization.require_admin`` with its operation, so a non-admin is
refused (PermissionDenied) before anything is read or changed; the transports only parse and map errors.
The CLI on the server is the administrator and calls ``Admin`` directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from service.access.admin import Admin
from service.access.explain import AccessExplainer, Explanation
from service.access.explain_query import QueryExplainer, QueryExplanation
from service.access.state import AclView
from service.domain.authorization import AdminOperation, HasRole, require_admin
from service.domain.queries import Caller
from service.domain.store import Store


class AuthorizedAdmin:
    """Admin operations for ``caller``; every one needs the admin role."""

    def __init__(
        self,
        caller: HasRole,
        actor: str,
        *,
        admin: Callable[[], Admin],
        admin_without_index: Callable[[], Admin],
        ingestor: Callable[..., Any],
        explainer: Callable[[], AccessExplainer],
        question_explainer: Callable[[], QueryExplainer],
    ) -> None:
        """``actor``: who the audit trail names (``grpc:alice``); the callables build the use cases lazily,
        so a refused call starts no index or model."""
        self._caller = caller
        self.actor = actor
        self._admin = admin
        self._light = admin_without_index
        self._ingestor = ingestor
        self._explainer = explainer
        self._question_explainer = question_explainer

    def _may(self, operation: AdminOperation) -> None:
        require_admin(self._caller, operation)

    # stores ------------------------------------------------------------------------------------------
    def update_settings(self, store_id: str, changes: dict[str, Any]) -> Store:
        self._may(AdminOperation.UPDATE_STORE_SETTINGS)
        return self._light().update_settings(store_id, **changes)

    # ACLs --------------------------------------------------------------------------------------------
    def acl_view(self, document_id: str, store_id: str | None) -> AclView:
        self._may(AdminOperation.READ_DOCUMENT_ACL)
        return self._light().acl_view(document_id, store_id)

    def set_acl(self, document_id: str, allow: Iterable[str], deny: Iterable[str], store_id: str | None) -> AclView:
        self._may(AdminOperation.SET_DOCUMENT_ACL)
        return self._admin().set_acl(document_id, allow, deny, self.actor, store_id)

    def reset_acl(self, document_id: str, store_id: str | None) -> AclView:
        self._may(AdminOperation.RESET_DOCUMENT_ACL)
        return self._admin().reset_acl(document_id, store_id)

    def explain_access(
        self, user_id: str, document_id: str, store_id: str | None, *, by: str, interface: str
    ) -> Explanation:
        """Why ``user_id`` can or cannot read ``document_id`` (read-only; audited as ``by`` over ``interface``)."""
        self._may(AdminOperation.EXPLAIN_ACCESS)
        return self._explainer().explain(user_id, document_id, store_id, by=by, interface=interface)

    def explain_question(
        self, user_id: str, store_id: str, question: str, searcher: Caller, *, by: str, interface: str
    ) -> QueryExplanation:
        """``searcher``'s top chunks for ``question``, each with whether ``user_id`` would see it (read-only;
        audited as ``by`` over ``interface``). ``searcher``: the admin themselves, whose rights bound the search."""
        self._may(AdminOperation.EXPLAIN_ACCESS)
        return self._question_explainer().explain(user_id, store_id, question, searcher, by=by, interface=interface)

    # groups ------------------------------------------------------------------------------------------
    def change_member(self, action: str, group: str, member: str) -> bool:
        """``add``: a global admin membership; ``remove``: a tombstone; ``reset``: back to the manifests."""
        self._may(AdminOperation.CHANGE_GROUP_MEMBER)
        admin = self._light()
        group = group if group.startswith("group:") else f"group:{group}"
        if action == "add":
            return admin.add_member(group, member, self.actor)
        if action == "remove":
            return admin.remove_member(group, member, self.actor)
        admin.reset_member(group, member)
        return True

    # documents ---------------------------------------------------------------------------------------
    def may_index(self) -> None:
        """PermissionDenied unless the caller may push documents (checked before a stream of them is read)."""
        self._may(AdminOperation.INDEX_DOCUMENT)

    def ingestor(self, store_id: str, *, create: bool) -> Any:
        """An ingestor of ``store_id`` for pushed documents (created only with ``create``)."""
        self._may(AdminOperation.INDEX_DOCUMENT)
        return self._ingestor(store_id, create=create)

    def delete_document(self, document_id: str, store_id: str | None) -> None:
        self._may(AdminOperation.DELETE_DOCUMENT)
        store = self._light().find_document_store(document_id, store_id)
        self._ingestor(store, create=False).delete(document_id)
