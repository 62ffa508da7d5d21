"""``docqa index``, ``ask`` and ``search``: documents in, answers out."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from acl.errors import InvalidArgument
from service.api.cli.filters import cli_filter

if TYPE_CHECKING:
    from indexer.ingest.shards import Shard


def cmd_index(args: argparse.Namespace, app: Any) -> int:
    from contextlib import nullcontext

    from indexer.ingest.pipeline import folder_and_manifest
    from indexer.ingest.shards import WHOLE
    from service.api.cli.progress import IndexProgress

    shard = WHOLE if args.shard is None else _shard(args.shard)  # before anything is opened
    manifest = Path(args.acl_manifest) if args.acl_manifest else None
    folder = Path(args.path)
    if os.path.lexists(folder) or not _store_had_folder(app, args.store, folder):
        # A missing folder is named before the model loads, unless it is the store's
        # own folder, deleted: then the run removes its documents and manifest groups.
        folder_and_manifest(folder, manifest)
    app.check_index_server()  # before the model loads: an unusable OpenSearch is named at once
    ingestor = app.ingestor(args.store)
    on_terminal = sys.stderr.isatty()
    progress = None
    if not args.quiet:
        progress = IndexProgress(
            f"indexing {args.path}" + (f" (shard {shard})" if shard != WHOLE else ""),
            stream=sys.stderr,
            bar=on_terminal,
            interval_s=args.progress_every,
        )
    # Library warnings (pypdf's "EOF marker not found", ...) reach the log, and
    # on a terminal the log is written above the bar, never into it.
    log_above_bar: Any = nullcontext()
    if progress is not None and on_terminal:
        from tqdm.contrib.logging import logging_redirect_tqdm

        log_above_bar = logging_redirect_tqdm()
    try:
        with log_above_bar:
            report = ingestor.index_folder(
                Path(args.path),
                manifest,
                progress=progress.on_files if progress else None,
                on_total=progress.on_total if progress else None,
                on_chunks=progress.on_chunks if progress else None,
                reindex=args.reindex,
                shard=shard,
            )
    finally:
        if progress is not None:
            progress.close()
    for name, reason in sorted({**report.refused, **report.failed}.items()):
        print(f"skipped {name}: {reason}", file=sys.stderr)
    for name in report.unmatched:
        print(f"note: {name}: no rule of the ACL manifest matches it, so nobody may read it", file=sys.stderr)
    which = f"store {args.store}" + (f" shard {shard}" if shard != WHOLE else "")
    print(
        f"{which}: {len(report.indexed)} indexed ({report.chunks} chunks), "
        f"{len(report.unchanged)} unchanged, {len(report.acl_updated)} ACL updated, "
        f"{len(report.removed)} removed, {len(report.failed)} failed"
        + (f", {len(report.refused)} refused (links, special files, bad names)" if report.refused else "")
        + (f", {len(report.skipped)} unsupported files ignored" if report.skipped else "")
    )
    if not report.ok:
        print("error: no document could be indexed", file=sys.stderr)
        return 1
    if shard == WHOLE and not args.no_graph:
        _save_graph(app, args.store, args.quiet)
    return 0


def _save_graph(app: Any, store_id: str, quiet: bool) -> None:
    """Build (or extend) the embedded store's HNSW graph and save it with the store, so that the next
    server answers at graph speed from its start (a store too small for a graph to pay off gets none)."""
    from indexer.index.embedded.index import EmbeddedIndex

    index = app.index
    if not isinstance(index, EmbeddedIndex):
        return  # OpenSearch keeps its own graphs
    started = time.monotonic()
    index.prepare(store_id)
    rows = index.stats(store_id).graph_rows
    if rows and not quiet:
        print(f"HNSW graph of {rows} rows saved with the store ({time.monotonic() - started:.1f} s)", file=sys.stderr)


def _shard(text: str) -> Shard:
    """``--shard I/N`` → ``Shard``; InvalidArgument (exit 2) naming the option for anything else."""
    from indexer.ingest.shards import Shard

    try:
        return Shard.parse(text)
    except InvalidArgument as exc:
        raise InvalidArgument(f"--shard {text}: {exc.message}") from None


def _store_had_folder(app: Any, store_id: str, folder: Path) -> bool:
    """Whether ``store_id`` holds documents indexed from ``folder`` (which may be gone now)."""
    if app.repository.get_store(store_id) is None:
        return False
    return bool(app.repository.list_documents(store_id, origin=f"folder:{folder.resolve()}"))


def print_answer(answer: Any, user: str, out: TextIO) -> None:
    if answer.answer is not None:
        print(f"Answer for {user}:", file=out)
        for line in answer.answer.splitlines():
            print(f"  {line}", file=out)
        print(file=out)
    if answer.chunks:
        from service.api.cli.sources import print_sources

        print_sources(answer, out)  # grouped per document; file: paths too: the CLI is the admin's, on the server
    elif answer.answer is None:
        print("No relevant chunk found.", file=out)
    for warning in answer.warnings:
        print(f"note: {warning}", file=out)
    threshold = "off" if answer.threshold is None else f"{answer.threshold:.3f} (level {answer.level})"
    print(f"threshold {threshold} · query {answer.query_id}", file=out)
    if answer.rewritten_question is not None:
        print(f"searched: {answer.rewritten_question}", file=out)
    if answer.conversation_id is not None:
        print(
            f"conversation {answer.conversation_id} (follow up with --conversation {answer.conversation_id})", file=out
        )
    if answer.retry_without_threshold_allowed:
        print("You may re-run the query with --level 0 to drop the threshold.", file=out)


def acting_user(args: argparse.Namespace) -> str:
    """``--as USER``, which the local path needs: only a server (``--server``) reads the user from a token."""
    if args.as_user is None:
        raise InvalidArgument(
            "give --as USER, the user to act for on this data directory "
            "(a token names its user only when asking a server: --server URL --token TOKEN)"
        )
    user: str = args.as_user
    return user


def cmd_ask(args: argparse.Namespace, app: Any) -> int:
    from service.api.cli.audited import CLI_INTERFACE, cli_identity, cli_queries
    from service.domain.queries import DocumentQuery, MultiDocumentQuery, VectorQuery

    identity = cli_identity(acting_user(args))  # validates the user id before any work
    if args.max_chunks is not None and args.max_chunks != -1:
        _check_k("--max-chunks", args.max_chunks, app, " (or -1 with --documents for whole documents)")
    query: Any
    filters = cli_filter(args)
    if args.document is not None and args.documents:
        raise InvalidArgument("use either --document or --documents, not both")
    if args.document is not None:
        if args.max_chunks is not None:
            raise InvalidArgument("--max-chunks does not apply to --document")
        query = DocumentQuery(
            args.store,
            args.question,
            args.document,
            args.level,
            not args.no_llm,
            filters,
            conversation_id=args.conversation,
        )
    elif args.documents:
        query = MultiDocumentQuery(
            args.store,
            args.question,
            tuple(args.documents),
            args.level,
            args.max_chunks,
            not args.no_llm,
            filters,
            conversation_id=args.conversation,
        )
    else:
        query = VectorQuery(
            args.store,
            args.question,
            args.level,
            args.max_chunks,
            not args.no_llm,
            filters,
            conversation_id=args.conversation,
        )
    answer = cli_queries(app).ask(identity, query, CLI_INTERFACE)
    if args.json:
        print(json.dumps(answer.to_dict(local=True), ensure_ascii=False))
    else:
        print_answer(answer, args.as_user, sys.stdout)
    return 0


def _check_k(option: str, value: int, app: Any, hint: str = "") -> None:
    """Name the option, not the API field, when a chunk count is out of range (the engine's own rule)."""
    from service.domain.limits import Limits

    try:
        Limits(max_k=app.settings.query.max_k).chunk_count(value, value, name=option)
    except InvalidArgument as exc:
        raise InvalidArgument(f"{exc.message}{hint}, got {value}") from None


def cmd_search(args: argparse.Namespace, app: Any) -> int:
    from service.api.cli.audited import CLI_INTERFACE, cli_identity, cli_queries
    from service.domain.queries import VectorQuery

    identity = cli_identity(acting_user(args))
    _check_k("--k", args.k, app)
    query = VectorQuery(
        args.store,
        args.question,
        args.level,
        args.k,
        perform_llm_query=False,
        filters=cli_filter(args),
        conversation_id=args.conversation,
    )
    answer = cli_queries(app).ask(identity, query, CLI_INTERFACE)
    if args.json:
        print(json.dumps(answer.to_dict(local=True), ensure_ascii=False))
    else:
        print_answer(answer, args.as_user, sys.stdout)
    return 0
