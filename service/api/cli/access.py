"""``docqa access explain`` (why a user can or cannot read a document) and ``docqa scim`` (its tokens)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

Command = Callable[[Any, str, str, str], argparse.ArgumentParser]


def add_access_commands(sub: Any, command: Command) -> None:
    p = command(
        sub,
        "access",
        "why a user can or cannot read a document: their principals with the chain and source of each, the "
        "document's ACL with its source, and the entry that decided (read-only)",
        "  docqa access explain --user carol --document finance/q3-results.md\n"
        "  docqa access explain --user alice --document handbook/expenses.md --store acme --json",
    )
    asub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    q = command(
        asub,
        "explain",
        "the decision for one user and one document, and why",
        "  docqa access explain --user carol --document finance/q3-results.md --store acme",
    )
    q.add_argument("--user", required=True, help="the user id (as in user:<id>)")
    q.add_argument("--document", required=True, help="the document's id")
    q.add_argument("--store", help="store id (needed when several stores hold the id)")
    q.add_argument("--json", action="store_true", help="print one JSON object")
    q.set_defaults(handler=cmd_access_explain)

    p = command(
        sub,
        "scim",
        "SCIM 2.0 provisioning at /scim/v2: issue the bearer token an identity provider calls it with",
        "  docqa scim token            # prints a new token once; store it in the identity provider\n"
        "  docqa scim revoke-tokens    # every token issued so far stops working",
    )
    p.add_argument("action", choices=["token", "revoke-tokens"], help="token: issue one; revoke-tokens: revoke all")
    p.set_defaults(handler=cmd_scim)


def cmd_access_explain(args: argparse.Namespace, app: Any) -> int:
    from service.access.explain import AccessExplainer
    from service.api.cli.admin import _actor

    # Audited as the servers' explainAccess is (class explain_access, interface cli, the operator's login).
    explainer = AccessExplainer(app.repository, app.group_sources, app.admin_without_index().acl_view)
    result = explainer.explain(args.user, args.document, args.store, by=_actor().removeprefix("cli:"), interface="cli")
    acl = result.acl
    if args.json:
        print(json.dumps(result.to_dict()))
        return 0
    verdict = "CAN read" if result.readable else "CANNOT read"
    print(f"user:{result.user} {verdict} {acl.document_id} in store {acl.store_id}")
    print(f"  because {result.reason}")
    origin = acl.source
    if acl.changed_by is not None:
        origin += f" (overridden by {acl.changed_by} at {acl.changed_at.isoformat() if acl.changed_at else '?'})"
    print(f"  document ACL ({origin}): allow {_listed(acl.effective.allow)}; deny {_listed(acl.effective.deny)}")
    print("  the user's principals:")
    for principal in result.principals:
        print(f"    {principal.path()}")
    return 0


def cmd_scim(args: argparse.Namespace, app: Any) -> int:
    import getpass

    from service.api.scim import issue_token, scim_rows

    if args.action == "token":
        print(issue_token(app, f"cli:{getpass.getuser()}"))
    else:
        print(f"{scim_rows(app).revoke_tokens()} token(s) revoked")
    return 0


def _listed(principals: frozenset[str]) -> str:
    return ", ".join(sorted(principals)) or "nobody"
