"""``docqa serve``: the gRPC and HTTP servers, until SIGINT or SIGTERM."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def cmd_serve(args: argparse.Namespace, app: Any) -> int:
    """Serve gRPC and HTTP (GraphQL, health, /metrics) until interrupted (SIGINT/SIGTERM)."""
    import signal
    import threading

    from service.api.graphql.schema import GraphQLServices
    from service.api.grpc.server import services_for, start_grpc
    from service.api.http import HttpServer, start_http, start_metrics
    from service.observability.metrics import Metrics

    services = services_for(app, Metrics())
    config = app.settings.server
    graphql_services = GraphQLServices(app, services.authenticator, services.queries, services.metrics)
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
    if len(https) > 1:
        where += f"; metrics on http://{host}:{https[1].port}/metrics"
    print(where, flush=True)
    stop = threading.Event()
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
