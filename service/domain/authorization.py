"""Who may do what: the one list of operations that need the admin role, and the one check they make.

Every admin use case calls ``require_admin`` with its operation before it reads or changes anything; the
transports (gRPC, GraphQL, the web console) only map the typed error (PERMISSION_DENIED / FORBIDDEN).
``tests/integration/test_admin_operations.py`` walks every GraphQL field and every gRPC method, and runs
each admin one as a non-admin against real servers.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from acl.errors import PermissionDenied

#: What a non-admin is told, on every transport.
NEEDS_ADMIN = "this operation needs the admin role"


class AdminOperation(StrEnum):
    """The use cases that need the admin role (what each one does to the service)."""

    UPDATE_STORE_SETTINGS = "change a store's settings"
    CALIBRATE_STORE = "calibrate a store's thresholds"
    RELEVANCY_PREVIEW = "preview a store's relevancy level"
    READ_DOCUMENT_ACL = "read a document's ACL and its provenance"
    SET_DOCUMENT_ACL = "override a document's ACL"
    RESET_DOCUMENT_ACL = "hand a document back to its source's ACL"
    EXPLAIN_ACCESS = "explain why a user can or cannot read a document (their groups and the deciding entry)"
    CHANGE_GROUP_MEMBER = "add, remove or reset a group membership"
    INDEX_DOCUMENT = "push documents into a store"
    DELETE_DOCUMENT = "delete a document"
    READ_FEEDBACK = "read a store's ratings"
    READ_OTHERS_AUDIT = "read another user's audit entries"
    OPEN_ADMIN_CONSOLE = "open the web console's admin page and script"
    ADAPT_STORE = "train and install a store's adapted reranker"


class HasRole(Protocol):
    """Anyone with an admin flag: a ``Caller`` or a verified ``Identity``."""

    @property
    def is_admin(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class ServerOperator:
    """Whoever runs the CLI on the server: its administrator (they hold the database and the data folder)."""

    is_admin: bool = True


SERVER_OPERATOR = ServerOperator()


def require_admin(caller: HasRole, operation: AdminOperation) -> None:
    """PermissionDenied unless ``caller`` has the admin role; ``operation`` names what was asked."""
    if not isinstance(operation, AdminOperation):  # pragma: no cover - the type system rules it out
        raise TypeError(f"not an admin operation: {operation!r}")
    if not caller.is_admin:
        raise PermissionDenied(NEEDS_ADMIN)


def may(caller: HasRole | None, operation: AdminOperation) -> bool:
    """Whether ``caller`` (None: nobody signed in) may run ``operation`` (for pages that show or hide)."""
    return caller is not None and caller.is_admin
