"""The grammar of ``docqa groups`` and ``docqa acl``: the group directory and documents' ACLs, admin changes."""

from __future__ import annotations

from typing import Any

from service.api.cli.admin import cmd_acl, cmd_groups
from service.api.cli.grammar import Command


def add_acl_commands(sub: Any, command: Command) -> None:
    """The ``groups`` and ``acl`` subcommands, each with its actions."""
    p = command(
        sub,
        "groups",
        "the group directory: admin changes win over the stores' manifests until reset",
        "  docqa groups list --store acme\n"
        "  docqa groups add-member finance user:frank\n"
        "  docqa groups remove-member auditors user:carol\n"
        "  docqa groups reset auditors user:carol",
    )
    gsub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, text, example in (
        (
            "add-member",
            "add a global membership (lifts an earlier remove-member of the pair)",
            "  docqa groups add-member finance user:frank\n  docqa groups add-member group:finance group:auditors",
        ),
        (
            "remove-member",
            "remove a membership from the global directory and from every store's manifest; "
            "kept over every re-index until 'groups reset'",
            "  docqa groups remove-member auditors user:carol",
        ),
        (
            "reset",
            "drop the admin's remove-member/add-member of the pair: the manifests decide again",
            "  docqa groups reset auditors user:carol",
        ),
    ):
        q = command(gsub, action, text, example)
        q.add_argument("group", help="group id or group:<id>")
        q.add_argument("principal", help="user:<id> or group:<id>")
    q = command(
        gsub,
        "list",
        "members in force by scope (global, store S's manifest); --provenance: every row and removal",
        "  docqa groups list\n  docqa groups list --store acme\n  docqa groups list --provenance --json",
    )
    q.add_argument("--store", help="memberships in force for this store's documents (global + its manifest)")
    q.add_argument("--provenance", action="store_true", help="every membership with its source, and removals")
    q.add_argument("--json", action="store_true", help="every membership with its source, as JSON")
    p.set_defaults(handler=cmd_groups)

    p = command(
        sub,
        "acl",
        "a document's authoritative ACL: admin changes win over the manifest until reset",
        "  docqa acl show finance/q3-results.md\n"
        "  docqa acl set finance/q3-results.md --allow group:finance --deny user:alice\n"
        "  docqa acl reset finance/q3-results.md",
    )
    asub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    text = (
        "replace the document's WHOLE ACL (allow and deny: entries not given are dropped) by an admin "
        "override; in force on the next query and kept over every re-index until 'acl reset'"
    )
    q = command(
        asub,
        "set",
        text,
        "  docqa acl set finance/q3-results.md --allow group:finance --deny user:alice\n"
        "  docqa acl set handbook/expenses.md --store acme --allow group:everyone",
    )
    q.add_argument("document_id", help="the document's id (its path relative to the indexed folder)")
    q.add_argument("--store", help="store id (needed when several stores hold the id)")
    q.add_argument(
        "--allow", nargs="+", metavar="P", default=[], help="principals who may read (user:<id>, group:<id>)"
    )
    q.add_argument("--deny", nargs="+", metavar="P", default=[], help="principals who may not, whatever --allow says")
    for action, text, example in (
        (
            "reset",
            "drop the admin override: the manifest's (or the pushing system's) ACL is in force again",
            "  docqa acl reset finance/q3-results.md --store acme",
        ),
        (
            "show",
            "the effective ACL, its source (manifest | api | admin with who and when) and the source's value",
            "  docqa acl show finance/q3-results.md\n  docqa acl show handbook/expenses.md --store acme",
        ),
    ):
        q = command(asub, action, text, example)
        q.add_argument("document_id", help="the document's id")
        q.add_argument("--store", help="store id (needed when several stores hold the id)")
    p.set_defaults(handler=cmd_acl)
