"""The gRPC server: DocQA's three services, standard health checking and server reflection."""

from __future__ import annotations

import logging
from concurrent import futures
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from service.api.errors import outcome_of
from service.api.grpc.admin import AdminServicer, IndexingServicer
from service.api.grpc.analysis import AnalysisServicer
from service.api.grpc.context import Services
from service.api.grpc.history import HistoryServicer
from service.api.grpc.malformed import MalformedRequests
from service.api.grpc.query import QueryServicer
from service.api.grpc.stubs import (
    admin_pb2_grpc,
    analysis_pb2_grpc,
    history_pb2_grpc,
    indexing_pb2_grpc,
    load,
    query_pb2_grpc,
    service_names,
)
from service.api.stream_pool import StreamPool
from service.api.tls import describe, grpc_server_credentials
from service.bootstrap import App
from service.observability.metrics import Metrics
from service.security.shared_rate_limit import limiter_for
from service.security.tokens import Authenticator
from service.usecases.audit import AuditedQueries

log = logging.getLogger("docqa.grpc")


def services_for(app: App, metrics: Metrics, authenticator: Authenticator | None = None) -> Services:
    """What the servicers need, built from the application (the engine is built on first query)."""
    limits = app.settings.limits
    return Services(
        app=app,
        stubs=load(),
        authenticator=authenticator or Authenticator(app.settings),
        queries=AuditedQueries(lambda: app.engine, lambda: app.repository, metrics, outcome_of=outcome_of),
        metrics=metrics,
        streams=StreamPool(limits.max_streams),
        limiter=limiter_for(limits.rate, "grpc", metrics.rate_limit_store_failures.labels("grpc").inc),
    )


@dataclass
class GrpcServer:
    """A started server; ``port`` is the one actually bound (useful with port 0)."""

    server: grpc.Server
    health: health.HealthServicer
    port: int
    streams: StreamPool

    def stop(self, grace_s: float | None = 2.0) -> None:
        self.health.enter_graceful_shutdown()
        self.server.stop(grace_s).wait()
        self.streams.shutdown()


def start_grpc(services: Services, host: str | None = None, port: int | None = None) -> GrpcServer:
    """Start serving DocQA over gRPC on ``host:port`` (defaults from configuration), over TLS when
    ``server.tls`` names a certificate."""
    config = services.app.settings.server
    limit = config.max_message_bytes
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=config.grpc_workers, thread_name_prefix="docqa-grpc"),
        options=[
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", limit),
            ("grpc.so_reuseport", 0),
        ],
        maximum_concurrent_rpcs=config.grpc_workers * 8,
        interceptors=[MalformedRequests(services.metrics)],
    )
    query_pb2_grpc.add_QueryServiceServicer_to_server(QueryServicer(services), server)
    indexing_pb2_grpc.add_IndexingServiceServicer_to_server(IndexingServicer(services), server)
    admin_pb2_grpc.add_AdminServiceServicer_to_server(AdminServicer(services), server)
    analysis_pb2_grpc.add_AnalysisServiceServicer_to_server(AnalysisServicer(services), server)
    history_pb2_grpc.add_HistoryServiceServicer_to_server(HistoryServicer(services), server)
    health_servicer = health.HealthServicer(experimental_non_blocking=True)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = service_names()
    reflection.enable_server_reflection((*names, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    address = f"{host or config.host}:{config.grpc_port if port is None else port}"
    credentials = grpc_server_credentials(config.tls)
    bound = server.add_insecure_port(address) if credentials is None else server.add_secure_port(address, credentials)
    server.start()
    for name in ("", *names):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    log.info("gRPC listening on %s (port %d, %s)", address, bound, describe(config.tls, "grpc"))
    return GrpcServer(server, health_servicer, bound, services.streams)
