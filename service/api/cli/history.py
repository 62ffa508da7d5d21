"""``docqa history`` and ``docqa feedback``, and the ``--conversation`` option of ``ask`` and ``search``.

The CLI is the administrator's tool on the server: ``--as USER`` acts for that user, exactly as a remote
caller with that user's token would (their own history; entries re-checked against their rights today),
through the same service calls and so under the same rules. A role is never implied: ``docqa history show
--audit`` reads another user's conversation as a token with the history auditor role would, and ``docqa
feedback list|export --admin`` act as a token with the admin role would, the user's own rights (``--as``)
deciding what is shown; without ``--admin`` they are refused as the servers refuse a non-admin.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from acl.model import user_principal
from service.domain.history import CHANGED_NOTE, ShownEntry

Command = Callable[[Any, str, str, str], argparse.ArgumentParser]


def add_history_commands(sub: Any, command: Command) -> None:
    """Add ``history``, ``feedback`` and the ``--conversation`` / ``--history-auditor`` options."""
    for name in ("ask", "search"):
        sub.choices[name].add_argument(
            "--conversation",
            metavar="ID",
            help="continue this conversation of the user's (a follow-up is rewritten; see 'docqa history')",
        )
    sub.choices["token"].add_argument(
        "--history-auditor", action="store_true", help="give the role that may read other users' conversations"
    )

    p = command(
        sub,
        "history",
        "a user's answered queries and conversations: list, show, delete; purge entries past the retention",
        "  docqa history list --as alice\n"
        "  docqa history show CONVERSATION_ID --as alice\n"
        "  docqa history delete QUERY_ID --as alice\n"
        "  docqa history delete --conversation CONVERSATION_ID --as alice\n"
        "  docqa history purge",
    )
    hsub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    q = command(hsub, "list", "the user's entries, newest first", "  docqa history list --as alice --first 5 --json")
    _as(q)
    q.add_argument("--first", type=int, metavar="N", help="entries per page, 1 to 100 (default 20)")
    q.add_argument("--after", metavar="CURSOR", help="the next page: the cursor the previous page printed")
    q.add_argument("--json", action="store_true", help="print one JSON object")
    q.set_defaults(handler=cmd_history_list)
    q = command(hsub, "show", "a conversation's turns, oldest first", "  docqa history show CONVERSATION_ID --as alice")
    q.add_argument("conversation", help="conversation id")
    _as(q)
    q.add_argument("--audit", action="store_true", help="read another user's conversation (history auditor)")
    q.add_argument("--json", action="store_true", help="print one JSON object")
    q.set_defaults(handler=cmd_history_show)
    q = command(
        hsub, "delete", "delete one entry, or a whole conversation", "  docqa history delete QUERY_ID --as alice"
    )
    q.add_argument("query_id", nargs="?", help="the entry's query id")
    q.add_argument("--conversation", metavar="ID", help="delete every turn of this conversation instead")
    _as(q)
    q.set_defaults(handler=cmd_history_delete)
    q = command(hsub, "purge", "delete entries older than history.retention_days", "  docqa history purge")
    q.set_defaults(handler=cmd_history_purge)

    p = command(
        sub,
        "feedback",
        "rate answers; list a store's ratings and export them as a docqa eval question file (admin)",
        "  docqa feedback rate QUERY_ID up --as alice --comment 'exactly right'\n"
        "  docqa feedback list --store acme --as root --admin\n"
        "  docqa feedback export --store acme --as root --admin --out regressions.yaml",
    )
    fsub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    q = command(
        fsub,
        "rate",
        "rate one of the user's answers (a later rating replaces it)",
        "  docqa feedback rate ID down --as bob",
    )
    q.add_argument("query_id", help="the answer's query id")
    q.add_argument("rating", help="up or down")
    _as(q)
    q.add_argument("--comment", default="", help="why (at most 2000 characters); name documents you expected")
    q.set_defaults(handler=cmd_feedback_rate)
    q = command(
        fsub, "list", "a store's ratings, newest first", "  docqa feedback list --store acme --as root --admin --json"
    )
    q.add_argument("--store", required=True, help="store id")
    _as(q, "the admin whose own rights decide which sources are shown")
    _admin(q)
    q.add_argument("--first", type=int, metavar="N", help="ratings per page, 1 to 100 (default 20)")
    q.add_argument("--after", metavar="CURSOR", help="the next page: the cursor the previous page printed")
    q.add_argument("--json", action="store_true", help="print one JSON object")
    q.set_defaults(handler=cmd_feedback_list)
    q = command(
        fsub,
        "export",
        "write the ratings as a question file for docqa eval",
        "  docqa feedback export --store acme --as root --admin --out f.yaml",
    )
    q.add_argument("--store", required=True, help="store id")
    _as(q, "the admin whose own rights decide which documents are named")
    _admin(q)
    q.add_argument("--out", required=True, metavar="FILE", help="the YAML file to write ('-' = stdout)")
    q.set_defaults(handler=cmd_feedback_export)


def _as(parser: argparse.ArgumentParser, text: str = "act as this user id, e.g. alice") -> None:
    parser.add_argument("--as", dest="as_user", required=True, metavar="USER", help=text)


def _admin(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--admin",
        action="store_true",
        help="act with the admin role, as a token of 'docqa token --admin' would (refused without it)",
    )


def _caller(args: argparse.Namespace, *, admin: bool = False, auditor: bool = False) -> Any:
    from service.domain.queries import Caller

    user_principal(args.as_user)  # validates the id
    return Caller(args.as_user, is_admin=admin, history_auditor=auditor)


def entry_dict(shown: ShownEntry) -> dict[str, Any]:
    """The one JSON presentation of a history entry (the CLI's; GraphQL and gRPC carry the same fields)."""
    e = shown.entry
    return {
        "query_id": e.query_id,
        "conversation_id": e.conversation_id,
        "store_id": e.store_id,
        "query_class": e.query_class,
        "question": e.question,
        "rewritten_question": e.rewritten_question,
        "answer": e.answer,
        "sources": [{f: getattr(s, f) for f in s.__slots__} for s in e.sources],
        "level": e.level,
        "threshold": e.threshold,
        "created_at": e.created_at.isoformat(),
        "sources_revoked": shown.sources_revoked,
        "changed": shown.changed,
        "withheld": shown.withheld,
        "rating": None if shown.rating is None else shown.rating.rating,
        "rating_comment": shown.comment,
    }


def _print_entry(shown: ShownEntry, out: TextIO) -> None:
    e = shown.entry
    rated = f" · rated {shown.rating.rating}" if shown.rating else ""
    print(f"{e.created_at:%Y-%m-%d %H:%M:%S} · {e.store_id} · query {e.query_id}{rated}", file=out)
    print(f"  conversation {e.conversation_id}", file=out)
    print(f"  Q: {e.question}", file=out)
    if e.rewritten_question and e.rewritten_question != e.question:
        print(f"  searched: {e.rewritten_question}", file=out)
    if shown.withheld is not None:
        print(f"  A: ({shown.withheld})", file=out)
    elif e.answer is not None:
        print(f"  A: {' '.join(e.answer.split())[:300]}", file=out)
    if shown.changed and shown.withheld is None:
        print(f"  note: {CHANGED_NOTE}", file=out)
    for document in e.document_ids:
        print(f"  - {document}", file=out)


def cmd_history_list(args: argparse.Namespace, app: Any) -> int:
    page = app.history.page(_caller(args), args.first, args.after)
    if args.json:
        print(json.dumps({"entries": [entry_dict(s) for s in page.entries], "next_cursor": page.next_cursor}))
        return 0
    for shown in page.entries:
        _print_entry(shown, sys.stdout)
    if not page.entries:
        print("No history.")
    if page.next_cursor:
        print(f"more: docqa history list --as {args.as_user} --after {page.next_cursor}")
    return 0


def cmd_history_show(args: argparse.Namespace, app: Any) -> int:
    turns = app.history.conversation(_caller(args, auditor=args.audit), args.conversation)
    if args.json:
        print(json.dumps({"conversation_id": args.conversation, "turns": [entry_dict(s) for s in turns]}))
        return 0
    for shown in turns:
        _print_entry(shown, sys.stdout)
    return 0


def cmd_history_delete(args: argparse.Namespace, app: Any) -> int:
    from acl.errors import InvalidArgument

    if (args.query_id is None) == (args.conversation is None):
        raise InvalidArgument("name either a query id or --conversation ID")
    if args.conversation is not None:
        deleted = app.history.delete_conversation(_caller(args), args.conversation)
        print(f"deleted conversation {args.conversation} ({deleted} entries)")
    else:
        app.history.delete_entry(_caller(args), args.query_id)
        print(f"deleted query {args.query_id}")
    return 0


def cmd_history_purge(args: argparse.Namespace, app: Any) -> int:
    purged = app.history.purge()
    print(f"purged {purged} entries older than {app.settings.history.retention_days} days")
    return 0


def cmd_feedback_rate(args: argparse.Namespace, app: Any) -> int:
    feedback = app.history.rate(_caller(args), args.query_id, args.rating, args.comment)
    print(f"rated query {feedback.query_id} {feedback.rating}")
    return 0


def cmd_feedback_list(args: argparse.Namespace, app: Any) -> int:
    page = app.history.feedback(_caller(args, admin=args.admin), args.store, args.first, args.after)
    if args.json:
        items = [
            {"user_id": f.user_id, "rating": f.rating, "comment": f.comment, "rated_at": f.created_at.isoformat(),
             "entry": entry_dict(s)}
            for f, s in page.items
        ]  # fmt: skip
        print(json.dumps({"feedback": items, "next_cursor": page.next_cursor}))
        return 0
    for feedback, shown in page.items:
        comment = f"({shown.withheld})" if shown.withheld is not None else " ".join(feedback.comment.split())
        print(f"{feedback.rating} by {feedback.user_id}: {comment}")
        _print_entry(shown, sys.stdout)
    if not page.items:
        print("No ratings.")
    if page.next_cursor:
        print(f"more: docqa feedback list --store {args.store} --as {args.as_user} --admin --after {page.next_cursor}")
    return 0


def cmd_feedback_export(args: argparse.Namespace, app: Any) -> int:
    from service.history.export import export_feedback

    text = export_feedback(app.history, _caller(args, admin=args.admin), args.store)
    if args.out == "-":
        sys.stdout.write(text)
    else:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    return 0
