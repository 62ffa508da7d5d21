"""The administrator's commands: stores, settings, groups, ACLs, tokens and the settings database's schema."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import Any

from acl.errors import InvalidArgument


def _group_principal(value: str) -> str:
    return value if value.startswith("group:") else f"group:{value}"


# ---------------------------------------------------------------------------- commands


def _store_dict(store: Any) -> dict[str, Any]:
    """Every setting of a store, in its field order."""
    return dataclasses.asdict(store)


def cmd_stores(args: argparse.Namespace, app: Any) -> int:
    from service.access.store_summaries import ADMIN, StoreSummaries

    # The CLI is the administrator's tool on the server: the admin view, through the one listing.
    summaries = StoreSummaries(app.repository).list(ADMIN)
    if args.json:
        print(json.dumps([{**_store_dict(s.store), "documents": s.documents, "chunks": s.chunks} for s in summaries]))
        return 0
    if not summaries:
        print("no stores yet: create one with 'docqa index PATH --store NAME'")
        return 0
    print(f"{'store':<20} {'documents':>9} {'chunks':>8} {'level':>6}  model")
    for s in summaries:
        print(f"{s.store.id:<20} {s.documents:>9} {s.chunks:>8} {s.store.level:>6.2f}  {s.store.embedding_model}")
    return 0


def cmd_settings(args: argparse.Namespace, app: Any) -> int:
    if args.action == "calibrate":
        from service.api.cli.calibrate import cmd_calibrate

        return cmd_calibrate(args, app, _actor().removeprefix("cli:"))
    if args.apply or args.sample is not None:
        raise InvalidArgument(f"'settings {args.action}' does not take --apply or --sample ('settings calibrate' does)")
    admin = app.admin_without_index()
    if args.action == "set":
        from service.domain.store import STORE_SETTINGS

        changes = {s.name: getattr(args, s.name) for s in STORE_SETTINGS}
        # An optional setting's --clear-NAME: the empty value, which removes it.
        changes |= {s.name: "" for s in STORE_SETTINGS if s.optional and getattr(args, f"clear_{s.name}")}
        store = admin.update_settings(args.store, **changes)
    else:
        store = admin.store(args.store)
    data = _store_dict(store)
    if args.json:
        print(json.dumps(data))
    else:
        width = max(map(len, data))  # the longest setting's name, whichever settings the table declares
        for key, value in data.items():
            shown = value.replace("\n", "\\n") if isinstance(value, str) else value
            print(f"{key:<{width}}  {shown}")
    return 0


def _actor() -> str:
    """Who made an admin change on the command line: ``cli:<login>`` ($DOCQA_ACTOR names someone else)."""
    import getpass

    name = os.environ.get("DOCQA_ACTOR")
    if not name:
        try:
            name = getpass.getuser()
        except Exception:  # no login name (a container without a passwd entry)
            name = "unknown"
    return f"cli:{name}"


def _membership_line(view: Any) -> str:
    parts = []
    for row in view.rows:
        where = "global" if not row.scope else f"store {row.scope}"
        who = f" by {row.changed_by}" if row.changed_by else ""
        when = f" at {row.changed_at.isoformat()}" if row.changed_at else ""
        parts.append(f"{row.source} ({where}){who}{when}")
    if view.tombstone is not None:
        t = view.tombstone
        parts.append(f"REMOVED by {t.removed_by} at {t.removed_at.isoformat()} (undo: docqa groups reset)")
    return f"{view.group} {view.member}: " + "; ".join(parts)


def _membership_dict(view: Any) -> dict[str, Any]:
    tombstone = view.tombstone
    return {
        "group": view.group,
        "member": view.member,
        "rows": [
            {
                "scope": row.scope or None,
                "source": row.source,
                "changed_by": row.changed_by,
                "changed_at": None if row.changed_at is None else row.changed_at.isoformat(),
            }
            for row in view.rows
        ],
        "removed": None
        if tombstone is None
        else {"removed_by": tombstone.removed_by, "removed_at": tombstone.removed_at.isoformat()},
    }


def cmd_groups(args: argparse.Namespace, app: Any) -> int:
    admin = app.admin_without_index()
    if args.action == "list":
        if args.json:
            print(json.dumps([_membership_dict(v) for v in admin.membership_views()]))
        elif args.provenance:
            for view in admin.membership_views():
                print(_membership_line(view))
        elif args.store is not None:
            for group, members in sorted(app.repository.group_members(args.store).items()):
                print(f"{group}: {', '.join(sorted(members))}")
        else:
            # Memberships in force, by scope: the global directory, then each store's manifest groups.
            scoped: dict[tuple[str, str], set[str]] = {}
            for view in admin.membership_views():
                if view.tombstone is None:
                    for row in view.rows:
                        scoped.setdefault((view.group, row.scope), set()).add(view.member)
            for (group, scope), members in sorted(scoped.items()):
                where = "global" if not scope else f"store {scope}"
                print(f"{group} ({where}): {', '.join(sorted(members))}")
        return 0
    group = _group_principal(args.group)
    if args.action == "add-member":
        added = admin.add_member(group, args.principal, _actor())
        print(f"{args.principal} {'added to' if added else 'was already in'} {group}")
    elif args.action == "remove-member":
        admin.remove_member(group, args.principal, _actor())
        print(f"{args.principal} removed from {group} (kept over re-indexing; undo: docqa groups reset)")
    else:
        admin.reset_member(group, args.principal)
        print(f"{args.principal} in {group}: handed back to the stores' manifests")
    return 0


def cmd_acl(args: argparse.Namespace, app: Any) -> int:
    if args.action == "set":
        if not args.allow and not args.deny:
            raise InvalidArgument("give --allow and/or --deny principals")
        view = app.admin.set_acl(args.document_id, args.allow or [], args.deny or [], _actor(), args.store)
    elif args.action == "reset":
        view = app.admin.reset_acl(args.document_id, args.store)
    else:
        view = app.admin_without_index().acl_view(args.document_id, args.store)
    print(json.dumps(view.to_dict()))
    return 0


def cmd_token(args: argparse.Namespace, app: Any) -> int:
    """Print a bearer token signed with the configured (or generated) HS256 secret."""
    from service.security.tokens import mint_token

    if args.group and app.settings.auth.token_groups != "trust":
        print(
            "warning: auth.token_groups is ignore, so the server ignores --group (groups come from the directory)",
            file=sys.stderr,
        )
    print(
        mint_token(
            app.settings,
            args.user,
            groups=args.group or [],
            admin=args.admin,
            ttl_s=args.ttl,
            history_auditor=args.history_auditor,
        )
    )
    return 0


def cmd_db(args: argparse.Namespace, app: Any) -> int:
    """The settings database's schema: ``upgrade`` applies the migrations, ``current`` tells the revision."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import OperationalError

    from acl.errors import Unavailable
    from indexer.private_files import private_dir
    from service.persistence.sql_settings import make_engine

    settings = app.settings
    if settings.database.url is None:
        private_dir(settings.data_dir)
    shown = make_url(settings.database_url).render_as_string(hide_password=True)
    engine = make_engine(settings.database_url)
    try:
        return _db_action(args.action, engine, shown)
    except OperationalError as exc:
        raise Unavailable(f"settings database {shown} unavailable: {exc.orig.__class__.__name__}") from None
    finally:
        engine.dispose()


def _db_action(action: str, engine: Any, shown: str) -> int:
    from service.persistence import schema

    before, head = schema.current_revision(engine), schema.head_revision()
    if action == "upgrade":
        after = schema.upgrade(engine)
        change = "already at" if before == after else f"upgraded from {before or 'empty'} to"
        print(f"settings database {shown}: {change} {after}")
        return 0
    state = "up to date" if before == head else "out of date: run 'docqa db upgrade'"
    print(f"settings database {shown}: at {before or 'empty (no schema)'}, head {head} ({state})")
    return 0 if before == head else 1


# ---------------------------------------------------------------------------- parser
