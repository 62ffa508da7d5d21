"""``docqa access explain`` (why a user can or cannot read a document, or which of an admin's top chunks for a
question they would see) and ``docqa scim`` (its tokens)."""

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
        "the decision for one user and one document, and why; or, for a question, which of your own top chunks "
        "the user would see",
        "  docqa access explain --user carol --document finance/q3-results.md --store acme\n"
        '  docqa access explain --user carol --question "What was Q3 revenue?" --store acme --as root',
    )
    q.add_argument("--user", required=True, help="the user id (as in user:<id>)")
    what = q.add_mutually_exclusive_group(required=True)
    what.add_argument("--document", help="the document's id")
    what.add_argument("--question", help="search the store as --as and mark each top chunk visible or not")
    q.add_argument("--store", help="store id (needed with --question, and when several stores hold the id)")
    q.add_argument(
        "--as", dest="as_user", metavar="ADMIN", help="with --question: whose search it is (default: your login)"
    )
    q.add_argument("-k", type=int, default=None, help="with --question: how many top chunks (1-50, default 10)")
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
    by = _actor().removeprefix("cli:")
    if args.question is not None:
        return _explain_question(args, app, by)
    explainer = AccessExplainer(app.repository, app.group_sources, app.admin_without_index().acl_view)
    result = explainer.explain(args.user, args.document, args.store, by=by, interface="cli")
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


def _explain_question(args: argparse.Namespace, app: Any, by: str) -> int:
    from acl.errors import InvalidArgument
    from service.domain.queries import Caller

    if args.store is None:
        raise InvalidArgument("--question needs --store")
    # The operator is the server's administrator; the search runs with --as's principals (their login's).
    searcher = Caller((args.as_user or by).removeprefix("user:"), is_admin=True)
    result = app.question_explainer().explain(
        args.user, args.store, args.question, searcher, k=args.k, by=by, interface="cli"
    )
    if args.json:
        print(json.dumps(result.to_dict()))
        return 0
    seen = sum(c.visible for c in result.chunks)
    top = f"user:{result.searched_as}'s top {len(result.chunks)} chunks in store {result.store_id}"
    print(f"user:{result.user} would see {seen} of {top}")
    for c in result.chunks:
        relevance = "-" if c.relevance is None else f"{c.relevance:.3f}"
        shown = "yes" if c.visible else "no "
        print(
            f"  {shown}  {relevance:>7}  {c.document_id}  {c.chunk_id}  {c.explanation.deciding or 'no entry allows'}"
        )
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
