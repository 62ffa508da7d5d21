"""``docqa serve``: the gRPC and HTTP servers, until SIGINT or SIGTERM."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

log = logging.getLogger("docqa.serve")

#: How often a running server purges history entries past ``history.retention_days`` (also at start).
PURGE_EVERY_S = 3600.0


def cmd_serve(args: argparse.Namespace, app: Any) -> int:
    """Serve gRPC and HTTP (GraphQL, health, /metrics) until interrupted (SIGINT/SIGTERM)."""
    import signal
    import threading

    from service.api.graphql.context import GraphQLServices
    from service.api.grpc.server import services_for, start_grpc
    from service.api.http import HttpServer, start_http, start_metrics
    from service.observability.metrics import Metrics

    # An OpenSearch DocQA would answer wrongly on stops start-up here (exit 8, the reason); one that does
    # not answer yet is logged and served anyway (/readyz tells the orchestrator).
    app.check_index_server()
    app.batch_questions()  # concurrent callers' questions share encoder calls (query_batching)
    app.keep_lexicons()  # BM25 from memory (index.lexicon_max_postings)
    purge_history(app)  # history.retention_days, at every start (and hourly below)
    services = services_for(app, Metrics())
    config = app.settings.server
    graphql_services = GraphQLServices(
        app, services.authenticator, services.queries, services.metrics, services.streams
    )
    grpc_server = start_grpc(services, args.host, args.grpc_port)
    https: list[HttpServer] = []
    try:
        https.append(start_http(graphql_services, args.host, args.http_port))
        if config.metrics_port is not None:
            https.append(start_metrics(graphql_services, args.host))
    except BaseException:
        for server in https:
            server.stop()
        grpc_server.stop(0)
        raise
    host = args.host or config.host
    scheme = "https" if config.tls.enabled else "http"
    where = f"gRPC on {host}:{grpc_server.port}{' (TLS)' if config.tls.enabled else ''}; "
    where += f"GraphQL on {scheme}://{host}:{https[0].port}/graphql"
    if app.settings.web.console:
        where += f"; web console on {scheme}://{host}:{https[0].port}/"
    if len(https) > 1:
        where += f"; metrics on http://{host}:{https[1].port}/metrics"
    print(where, flush=True)
    # In the background: a language model that is slow to answer must not hold the ports back.
    threading.Thread(target=report_generator, args=(app,), name="docqa-generator-check", daemon=True).start()
    stop = threading.Event()
    threading.Thread(target=keep_purging, args=(app, stop), name="docqa-history-purge", daemon=True).start()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):
            if not all(server.thread.is_alive() for server in https):
                print("error: the HTTP server stopped", file=sys.stderr)
                return 1
    finally:
        for server in https:
            server.stop()
        grpc_server.stop(5.0)
    return 0


def purge_history(app: Any) -> int:
    """Purge history entries past ``history.retention_days``; a failure is logged (the next run tries again)."""
    try:
        purged: int = app.history.purge()
    except Exception:  # the database may be briefly away; serving goes on
        log.exception("history entries could not be purged")
        return 0
    log.info("purged %d history entries past history.retention_days", purged)
    return purged


def keep_purging(app: Any, stop: Any, every_s: float = PURGE_EVERY_S) -> None:
    """Purge every ``every_s`` seconds until ``stop`` (a threading.Event) is set: a server that runs for months
    keeps no entry much past its retention."""
    while not stop.wait(every_s):
        purge_history(app)


def report_generator(app: Any) -> list[str]:
    """Check the language model once at start-up and log why it fails (as ``docqa doctor`` and /readyz see it)."""
    try:
        problems: list[str] = app.generator_problems()
    except Exception:  # the servers keep running; /readyz keeps asking
        log.exception("the language model could not be checked at start-up")
        return []
    for problem in problems:
        log.error("language model check failed at start-up: %s (/readyz answers 503 until it passes)", problem)
    if not problems and app.settings.generator.backend != "extractive":
        log.info("language model checks passed")
    return problems
