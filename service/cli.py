"""``docqa``: the command line. It parses, calls the application, and maps errors.

The CLI is the administrator's tool on the server: ``--as USER`` acts for that
user, with that user's principals from the directory. Commands that don't
embed never import the embedding model.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from acl.errors import DocQAError, InvalidArgument
from acl.model import user_principal
from service.errors import mapping_for, public_message

log = logging.getLogger("docqa.cli")

Handler = Callable[[argparse.Namespace, Any], int]


def _group_principal(value: str) -> str:
    return value if value.startswith("group:") else f"group:{value}"


# ---------------------------------------------------------------------------- commands
def cmd_index(args: argparse.Namespace, app: Any) -> int:
    from tqdm import tqdm

    ingestor = app.ingestor(args.store)
    manifest = Path(args.acl_manifest) if args.acl_manifest else None
    bar = tqdm(desc=f"indexing {args.path}", unit="file", disable=args.quiet or None, file=sys.stderr)
    try:
        report = ingestor.index_folder(
            Path(args.path),
            manifest,
            progress=bar.update,
            on_total=lambda n: setattr(bar, "total", n),
        )
    finally:
        bar.close()
    for name, reason in sorted(report.failed.items()):
        print(f"skipped {name}: {reason}", file=sys.stderr)
    print(
        f"store {args.store}: {len(report.indexed)} indexed ({report.chunks} chunks), "
        f"{len(report.unchanged)} unchanged, {len(report.acl_updated)} ACL updated, "
        f"{len(report.removed)} removed, {len(report.failed)} failed"
        + (f", {len(report.skipped)} unsupported files ignored" if report.skipped else "")
    )
    if not report.ok:
        print("error: no document could be indexed", file=sys.stderr)
        return 1
    return 0


def _print_answer(answer: Any, user: str, out: TextIO) -> None:
    if answer.answer is not None:
        print(f"Answer for {user}:", file=out)
        for line in answer.answer.splitlines():
            print(f"  {line}", file=out)
        print(file=out)
    if answer.chunks:
        print("Sources:", file=out)
        for number, chunk in enumerate(answer.chunks, start=1):
            where = " › ".join(chunk.heading_path) or chunk.title
            score = "n/a" if chunk.score is None else f"{chunk.score:.3f}"
            relevance = "n/a" if chunk.relevance is None else f"{chunk.relevance:.2f}"
            print(f"  [{number}] {chunk.document_id} — {where}", file=out)
            print(f"      score {score}  relevance {relevance}  ({chunk.source_uri})", file=out)
            snippet = " ".join(chunk.text.split())
            print(f"      {snippet[:200]}{'…' if len(snippet) > 200 else ''}", file=out)
    elif answer.answer is None:
        print("No relevant chunk found.", file=out)
    threshold = "off" if answer.threshold is None else f"{answer.threshold:.3f} (level {answer.level})"
    print(f"threshold {threshold} · query {answer.query_id}", file=out)
    if answer.retry_without_threshold_allowed:
        print("You may re-run the query with --level 0 to drop the threshold.", file=out)


def cmd_ask(args: argparse.Namespace, app: Any) -> int:
    from service.queries import Caller, DocumentQuery, MultiDocumentQuery, VectorQuery

    caller = Caller(args.as_user)
    user_principal(args.as_user)  # validates the user id before any work
    query: Any
    if args.document is not None and args.documents:
        raise InvalidArgument("use either --document or --documents, not both")
    if args.document is not None:
        if args.max_chunks is not None:
            raise InvalidArgument("--max-chunks does not apply to --document")
        query = DocumentQuery(args.store, args.question, args.document, args.level, not args.no_llm)
    elif args.documents:
        query = MultiDocumentQuery(
            args.store, args.question, tuple(args.documents), args.level, args.max_chunks, not args.no_llm
        )
    else:
        query = VectorQuery(args.store, args.question, args.level, args.max_chunks, not args.no_llm)
    answer = app.engine.ask(caller, query)
    if args.json:
        print(json.dumps(answer.to_dict(), ensure_ascii=False))
    else:
        _print_answer(answer, args.as_user, sys.stdout)
    return 0


def cmd_search(args: argparse.Namespace, app: Any) -> int:
    from service.queries import Caller, VectorQuery

    caller = Caller(args.as_user)
    user_principal(args.as_user)
    answer = app.engine.ask(caller, VectorQuery(args.store, args.question, args.level, args.k, perform_llm_query=False))
    if args.json:
        print(json.dumps(answer.to_dict(), ensure_ascii=False))
    else:
        _print_answer(answer, args.as_user, sys.stdout)
    return 0


def _store_dict(store: Any) -> dict[str, Any]:
    """Every setting of a store, in its field order."""
    return dataclasses.asdict(store)


def cmd_stores(args: argparse.Namespace, app: Any) -> int:
    summaries = app.admin_without_index().summaries()
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
    admin = app.admin_without_index()
    if args.action == "set":
        store = admin.update_settings(
            args.store,
            level=args.level,
            min_threshold=args.min_threshold,
            max_threshold=args.max_threshold,
            max_chunks=args.max_chunks,
            prompt_template=args.prompt_template,
            llm_model_id=args.llm_model_id,
        )
    else:
        store = admin.store(args.store)
    data = _store_dict(store)
    if args.json:
        print(json.dumps(data))
    else:
        for key, value in data.items():
            shown = value.replace("\n", "\\n") if isinstance(value, str) else value
            print(f"{key:<16} {shown}")
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


#: Oldest OpenSearch the adapter supports per engine (cosine on faiss: 2.19; ef_search in the query: 2.16).
_OPENSEARCH_MINIMUM = {"faiss": (2, 19), "lucene": (2, 16)}


def cmd_doctor(args: argparse.Namespace, app: Any) -> int:
    """Check configuration and connectivity; print one line per check; never print a secret."""
    from sqlalchemy.engine import make_url

    settings = app.settings
    failed = 0

    def line(check: str, ok: bool, detail: str) -> None:
        nonlocal failed
        failed += 0 if ok else 1
        print(f"{check:<24} {'ok' if ok else 'FAIL':<5} {detail}")

    stores: list[Any] = []
    database = make_url(settings.database_url).render_as_string(hide_password=True)
    try:
        stores = app.repository.list_stores()
        line("settings database", True, f"{database} ({len(stores)} store(s))")
    except DocQAError as exc:
        line("settings database", False, f"{database}: {public_message(exc)}")
    except Exception as exc:  # any driver error: the database is what is wrong
        line("settings database", False, f"{database}: cannot open ({type(exc).__name__})")

    _doctor_index(app, stores, line)
    from service.watsonx import check as check_generator

    for name, ok, detail in check_generator(settings):
        line(name, ok, detail)
    return 0 if not failed else 1


def _doctor_index(app: Any, stores: list[Any], line: Callable[[str, bool, str], None]) -> None:
    """The index checks of ``docqa doctor``."""
    from acl.errors import NotFound

    settings = app.settings
    backend = settings.index.backend
    if backend != "opensearch":
        line("index backend", True, f"{backend} (under {settings.index_dir})")
        return
    config = settings.index.opensearch
    auth = "api key" if config.api_key else "username/password" if config.username else "none"
    url = config.url or ""
    tls = f", TLS verify {'on' if config.verify else 'OFF'}" if url.startswith("https:") else ""
    line("index backend", True, f"opensearch at {url} (auth: {auth}{tls}, engine {config.engine})")
    try:
        server = app.index.server()
    except DocQAError as exc:
        line("opensearch reachable", False, public_message(exc))
        return
    version = server.version_tuple()
    minimum = _OPENSEARCH_MINIMUM[config.engine]
    line(
        "opensearch reachable",
        server.distribution == "opensearch" and version >= minimum,
        f"{server.distribution} {server.version}"
        + ("" if version >= minimum else f" (engine {config.engine} needs {'.'.join(map(str, minimum))} or later)"),
    )
    line("k-NN plugin", server.knn_plugin, "installed" if server.knn_plugin else "missing: vector search cannot work")
    for store in stores:
        check = f"store {store.id}"
        try:
            facts, problems = app.index.check_store(store.id)
        except NotFound:
            line(check, False, f"no index {app.index.index_name(store.id)} (re-index the store)")
            continue
        except DocQAError as exc:
            line(check, False, public_message(exc))
            continue
        shape = f"index {facts.name}: dimension {facts.dimension}, {facts.engine}, {facts.space_type}"
        line(check, not problems, shape if not problems else f"{shape}; " + "; ".join(problems))


def cmd_serve(args: argparse.Namespace, app: Any) -> int:
    """Serve gRPC and HTTP (GraphQL, health, /metrics) until interrupted (SIGINT/SIGTERM)."""
    import signal
    import threading

    from service.graphql_app import start_http
    from service.graphql_schema import GraphQLServices
    from service.grpc_server import services_for, start_grpc
    from service.metrics import Metrics

    services = services_for(app, Metrics())
    config = app.settings.server
    grpc_server = start_grpc(services, args.host, args.grpc_port)
    try:
        http = start_http(
            GraphQLServices(app, services.authenticator, services.queries, services.metrics),
            args.host,
            args.http_port,
        )
    except BaseException:
        grpc_server.stop(0)
        raise
    host = args.host or config.host
    print(f"gRPC on {host}:{grpc_server.port}; GraphQL on http://{host}:{http.port}/graphql", flush=True)
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):
            if not http.thread.is_alive():
                print("error: the HTTP server stopped", file=sys.stderr)
                return 1
    finally:
        http.stop()
        grpc_server.stop(5.0)
    return 0


def cmd_token(args: argparse.Namespace, app: Any) -> int:
    """Print a bearer token signed with the configured (or generated) HS256 secret."""
    from service.auth import mint_token

    if args.group and app.settings.auth.groups_claim is None:
        print("warning: auth.groups_claim is not configured, so the server ignores --group", file=sys.stderr)
    print(mint_token(app.settings, args.user, groups=args.group or [], admin=args.admin, ttl_s=args.ttl))
    return 0


def cmd_db(args: argparse.Namespace, app: Any) -> int:
    """The settings database's schema: ``upgrade`` applies the migrations, ``current`` tells the revision."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import OperationalError

    from acl.errors import Unavailable
    from service.sql_repository import make_engine

    settings = app.settings
    if settings.database.url is None:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    shown = make_url(settings.database_url).render_as_string(hide_password=True)
    engine = make_engine(settings.database_url)
    try:
        return _db_action(args.action, engine, shown)
    except OperationalError as exc:
        raise Unavailable(f"settings database {shown} unavailable: {exc.orig.__class__.__name__}") from None
    finally:
        engine.dispose()


def _db_action(action: str, engine: Any, shown: str) -> int:
    from service import schema

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
class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own exit code 2, no traceback
        self.print_usage(sys.stderr)
        self.exit(2, f"error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="docqa", description="Access-controlled document question answering.")
    parser.add_argument("--config", help="YAML configuration file (default: $DOCQA_CONFIG)")
    parser.add_argument("--data-dir", help="data directory (default: $DOCQA_DATA_DIR or ~/.local/share/docqa)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("index", help="index a folder (txt, md, html, pdf, docx)")
    p.add_argument("path")
    p.add_argument("--store", required=True)
    p.add_argument("--acl-manifest", help="ACL manifest (default: acl.yaml in the folder)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(handler=cmd_index)

    for name, handler in (("ask", cmd_ask), ("search", cmd_search)):
        p = sub.add_parser(name, help="answer a question" if name == "ask" else "scored chunks only")
        p.add_argument("question")
        p.add_argument("--store", required=True)
        p.add_argument("--as", dest="as_user", required=True, metavar="USER", help="user id, e.g. alice")
        p.add_argument("--level", help="relevancy level in [0, 1]; 0 = no threshold")
        p.add_argument("--json", action="store_true", help="print one JSON object")
        if name == "ask":
            p.add_argument("--documents", nargs="+", metavar="ID", help="MultiDocumentQuery over these")
            p.add_argument("--document", metavar="ID", help="DocumentQuery about this document")
            p.add_argument("--max-chunks", type=int, help="chunks to use (-1: whole documents)")
            p.add_argument("--no-llm", action="store_true", help="scored chunks only, no answer")
        else:
            p.add_argument("--k", type=int, default=10, help="number of chunks (default 10)")
        p.set_defaults(handler=handler)

    p = sub.add_parser("stores", help="list stores with document and chunk counts")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_stores)

    p = sub.add_parser("settings", help="show or change a store's settings")
    p.add_argument("action", choices=["show", "set"])
    p.add_argument("store")
    p.add_argument("--level")
    p.add_argument("--min-threshold")
    p.add_argument("--max-threshold")
    p.add_argument("--max-chunks", type=int)
    p.add_argument("--prompt-template")
    p.add_argument("--llm-model-id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_settings)

    p = sub.add_parser("groups", help="the group directory (admin changes win over manifests until reset)")
    gsub = p.add_subparsers(dest="action", required=True, parser_class=_Parser)
    for action, text in (
        ("add-member", "add a global membership (lifts an earlier remove-member of the pair)"),
        (
            "remove-member",
            "remove a membership from the global directory and from every store's manifest; "
            "kept over every re-index until 'groups reset'",
        ),
        ("reset", "drop the admin's remove-member/add-member of the pair: the manifests decide again"),
    ):
        q = gsub.add_parser(action, help=text, description=text)
        q.add_argument("group", help="group id or group:<id>")
        q.add_argument("principal", help="user:<id> or group:<id>")
    q = gsub.add_parser(
        "list", help="members in force by scope (global, store S's manifest); --provenance: every row and removal"
    )
    q.add_argument("--store", help="memberships in force for this store's documents (global + its manifest)")
    q.add_argument("--provenance", action="store_true", help="every membership with its source, and removals")
    q.add_argument("--json", action="store_true", help="every membership with its source, as JSON")
    p.set_defaults(handler=cmd_groups)

    p = sub.add_parser("acl", help="a document's authoritative ACL (admin changes win over the manifest until reset)")
    asub = p.add_subparsers(dest="action", required=True, parser_class=_Parser)
    text = (
        "replace the document's WHOLE ACL (allow and deny: entries not given are dropped) by an admin "
        "override; in force on the next query and kept over every re-index until 'acl reset'"
    )
    q = asub.add_parser("set", help=text, description=text)
    q.add_argument("document_id")
    q.add_argument("--store")
    q.add_argument("--allow", nargs="+", metavar="P", default=[])
    q.add_argument("--deny", nargs="+", metavar="P", default=[])
    text = "drop the admin override: the manifest's (or the pushing system's) ACL is in force again"
    q = asub.add_parser("reset", help=text, description=text)
    q.add_argument("document_id")
    q.add_argument("--store")
    text = "the effective ACL, its source (manifest | api | admin with who and when) and the source's value"
    q = asub.add_parser("show", help=text, description=text)
    q.add_argument("document_id")
    q.add_argument("--store")
    p.set_defaults(handler=cmd_acl)

    p = sub.add_parser("doctor", help="check configuration and connectivity (settings database, index)")
    p.set_defaults(handler=cmd_doctor)

    p = sub.add_parser("serve", help="serve gRPC and GraphQL (ports from configuration)")
    p.add_argument("--host", help="address to listen on (default: server.host)")
    p.add_argument("--grpc-port", type=int, help="gRPC port (default: server.grpc_port, 50051)")
    p.add_argument("--http-port", type=int, help="HTTP/GraphQL port (default: server.http_port, 8080)")
    p.set_defaults(handler=cmd_serve)

    p = sub.add_parser("token", help="mint a bearer token (JWT) with the configured HS256 secret")
    p.add_argument("--user", required=True, help="user id (the token's subject)")
    p.add_argument("--group", action="append", metavar="G", help="group id (needs auth.groups_claim); repeatable")
    p.add_argument("--admin", action="store_true", help="give the admin role")
    p.add_argument("--ttl", type=int, metavar="S", help="lifetime in seconds (default: auth.default_ttl_s)")
    p.set_defaults(handler=cmd_token)

    p = sub.add_parser("db", help="the settings database's schema (Alembic migrations)")
    p.add_argument("action", choices=["upgrade", "current"], help="upgrade: apply migrations; current: show revision")
    p.set_defaults(handler=cmd_db)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code (never raises, never a traceback)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    if args.data_dir:
        os.environ["DOCQA_DATA_DIR"] = args.data_dir
    app = None
    try:
        from service.bootstrap import build_app
        from service.config import load_settings

        app = build_app(load_settings(args.config))
        return int(args.handler(args, app))
    except DocQAError as exc:
        print(f"error: {public_message(exc)}", file=sys.stderr)
        return mapping_for(exc).exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # an internal error: say so plainly, details only on request
        if args.debug:
            raise
        log.debug("internal error", exc_info=True)
        print(f"internal error ({type(exc).__name__}); re-run with --debug for details", file=sys.stderr)
        return mapping_for(exc).exit_code
    finally:
        if app is not None:
            app.close()


def entry() -> None:  # pragma: no cover
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
