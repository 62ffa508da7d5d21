"""A small DocQA world for the server tests: real servers on 127.0.0.1, fake embedder, three documents."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from sqlalchemy import event

from acl.model import Acl
from service.api.graphql.context import GraphQLServices
from service.api.grpc.context import Services
from service.api.grpc.server import GrpcServer, services_for, start_grpc
from service.api.http import HttpServer, start_http
from service.bootstrap import App, build_app
from service.config import Settings
from service.generation.port import Completion, Generator
from service.generation.prompt import Prompt
from service.observability.metrics import Metrics
from service.security.tokens import mint_token
from tests.fakes_service import FakeEmbedder

STORE = "acme"
SECRET = "integration-test-secret-" + "0123456789abcdef" * 3
#: A configured (shared) secret needs an issuer and an audience; tokens carry both.
ISSUER, AUDIENCE = "https://idp.test", "docqa"
QUESTION = "How many days of paid vacation leave?"

DOCUMENTS = {
    # id: (text, allow)
    "handbook": ("The vacation policy grants 25 days of paid vacation leave per year.", ["group:everyone"]),
    "executive-pay": ("Executives get 30 days of paid vacation leave and a bonus.", ["group:hr"]),
    "bob-notes": ("Bob's notes: paid vacation leave days I still have: 12.", ["user:bob"]),
}


def settings_for(
    data_dir: Path, *, limits: dict[str, Any] | None = None, server: Mapping[str, object] | None = None, **auth: object
) -> Settings:
    return Settings(
        data_dir=data_dir,
        auth={"hs256_secret": SECRET, "issuer": ISSUER, "audience": AUDIENCE, **auth},
        server={"grpc_port": 0, "http_port": 0, "max_message_bytes": 256 * 1024, **(server or {})},
        limits=limits or {},
    )


def build_world(
    data_dir: Path,
    *,
    generator: Generator | None = None,
    limits: dict[str, Any] | None = None,
    server: Mapping[str, object] | None = None,
    **auth: object,
) -> App:
    """An application with the ``acme`` store: alice is in group hr, bob owns his notes (``server``: more
    ``server.*`` settings, e.g. TLS)."""
    app = build_app(
        settings_for(data_dir, limits=limits, server=server, **auth),
        generator=generator,
        embedder_factory=lambda _: FakeEmbedder(),
    )
    ingestor = app.ingestor(STORE)
    for document_id, (text, allow) in DOCUMENTS.items():
        ingestor.upsert_bytes(
            document_id,
            text.encode(),
            "text/plain",
            acl=Acl.of(allow),
            title=document_id.title(),
            source_uri=f"https://cms.example/{document_id}",
        )
    app.admin_without_index().add_member("group:hr", "user:alice", "test")
    return app


VAULT = "vault"


def add_vault(app: App) -> None:
    """A second store, ``vault``, whose only document only bob may read (idempotent)."""
    app.ingestor(VAULT).upsert_bytes(
        "bob-secret", b"Bob keeps the spare key under the mat.", "text/plain", acl=Acl.of(["user:bob"])
    )


def token(app: App, user: str, *, admin: bool = False, groups: Sequence[str] = (), ttl_s: int = 300) -> str:
    return mint_token(app.settings, user, admin=admin, groups=groups, ttl_s=ttl_s)


def bearer(app: App, user: str, *, admin: bool = False) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token(app, user, admin=admin)}"),)


class SlowGenerator(Generator):
    """Answers after a pause (for deadlines), in several pieces."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.model_id = "slow"
        self.context_tokens = 8192
        self.delay_s = delay_s

    def generate(self, prompt: Prompt) -> Completion:
        time.sleep(self.delay_s)
        return Completion(text=self._text(prompt), model_id=self.model_id)

    def stream(self, prompt: Prompt) -> Iterator[str]:
        """The same text, a word at a time, as a language model streams it."""
        time.sleep(self.delay_s)
        self.streamed = getattr(self, "streamed", 0) + 1
        yield from re.findall(r"\S+\s*", self._text(prompt))

    @staticmethod
    def _text(prompt: Prompt) -> str:
        cited = " ".join(f"[{c.citation}]" for c in prompt.chunks)
        return f"The answer is in {cited} as generated."


def serve_grpc(data_dir: Path) -> Iterator[tuple[App, GrpcServer, grpc.Channel]]:
    """A world behind a real gRPC server on loopback, and a channel to it; closed at the end."""
    app = build_world(data_dir, generator=SlowGenerator())
    server = start_grpc(services_for(app, Metrics()), "127.0.0.1", 0)
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    yield app, server, channel
    channel.close()
    server.stop(0)
    app.close()


@dataclass
class Served:
    """An application behind real servers on loopback: gRPC (None when not asked for) and HTTP (GraphQL)."""

    services: Services
    grpc: GrpcServer | None
    http: HttpServer

    @property
    def channel_target(self) -> str:
        assert self.grpc is not None
        return f"127.0.0.1:{self.grpc.port}"

    @property
    def graphql_url(self) -> str:
        return f"http://127.0.0.1:{self.http.port}/graphql"


@contextmanager
def on_servers(app: App, *, with_grpc: bool = True) -> Iterator[Served]:
    """``app`` behind a gRPC server (unless ``with_grpc`` is False) and the HTTP server, as ``docqa serve``
    wires them (one Services for both); both stopped at the end. The application stays the caller's."""
    services = services_for(app, Metrics())
    grpc_server = start_grpc(services, "127.0.0.1", 0) if with_grpc else None
    try:
        http = start_http(
            GraphQLServices(app, services.authenticator, services.queries, services.metrics, services.streams),
            "127.0.0.1",
            0,
        )
        try:
            yield Served(services, grpc_server, http)
        finally:
            http.stop()
    finally:
        if grpc_server is not None:
            grpc_server.stop(0)


@contextmanager
def commits_that_wrote(app: App) -> Iterator[list[list[str]]]:
    """The tables each committed transaction of the settings database wrote to, as the test runs."""
    written: list[str] = []
    wrote: list[list[str]] = []

    def on_execute(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO"):
            written.append(statement.split()[2].strip('"'))

    def on_commit(conn: Any) -> None:
        if written:
            wrote.append(sorted(written))
            written.clear()

    engine = app.repository.engine  # type: ignore[attr-defined]
    event.listen(engine, "before_cursor_execute", on_execute)
    event.listen(engine, "commit", on_commit)
    try:
        yield wrote
    finally:
        event.remove(engine, "before_cursor_execute", on_execute)
        event.remove(engine, "commit", on_commit)


@contextmanager
def inserts_fail(app: App, table: str) -> Iterator[None]:
    """Every insert into ``table`` of the settings database (SQLite) fails, as a full disk would, as the test runs."""
    engine = app.repository.engine  # type: ignore[attr-defined]
    with engine.begin() as conn:
        conn.exec_driver_sql(
            f"CREATE TRIGGER {table}_full BEFORE INSERT ON {table} BEGIN SELECT RAISE(ABORT, 'disk full'); END"
        )
    try:
        yield
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TRIGGER {table}_full")
