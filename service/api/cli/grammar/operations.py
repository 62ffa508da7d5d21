"""The grammar of ``docqa doctor``, ``serve``, ``token`` and ``db``: running and operating the service."""

from __future__ import annotations

from typing import Any

from service.api.cli.admin import cmd_db, cmd_token
from service.api.cli.doctor import cmd_doctor
from service.api.cli.grammar import Command
from service.api.cli.serve import cmd_serve


def add_operations_commands(sub: Any, command: Command) -> None:
    """The ``doctor``, ``serve``, ``token`` and ``db`` subcommands."""
    p = command(
        sub,
        "doctor",
        "check configuration and connectivity: settings database, index, language model",
        "  docqa doctor\n  DOCQA_CONFIG=/etc/docqa/config.yaml docqa doctor",
    )
    p.set_defaults(handler=cmd_doctor)

    p = command(
        sub,
        "serve",
        "serve gRPC and HTTP (GraphQL, health, metrics) until interrupted",
        "  docqa serve\n  docqa serve --host 0.0.0.0 --grpc-port 50051 --http-port 8080",
    )
    p.add_argument("--host", help="address to listen on (default: server.host, 127.0.0.1)")
    p.add_argument("--grpc-port", type=int, metavar="PORT", help="gRPC port (default: server.grpc_port, 50051)")
    p.add_argument("--http-port", type=int, metavar="PORT", help="HTTP/GraphQL port (default: server.http_port, 8080)")
    p.set_defaults(handler=cmd_serve)

    p = command(
        sub,
        "token",
        "mint a bearer token (JWT) with the configured HS256 secret",
        "  docqa token --user alice\n  docqa token --user root --admin --ttl 600",
    )
    p.add_argument("--user", required=True, help="user id (the token's subject)")
    p.add_argument(
        "--group", action="append", metavar="G", help="group id (used only with auth.token_groups: trust); repeatable"
    )
    p.add_argument("--admin", action="store_true", help="give the admin role")
    p.add_argument(
        "--ttl",
        type=int,
        metavar="S",
        help="lifetime in seconds (default: auth.default_ttl_s; at most auth.max_token_lifetime_s)",
    )
    p.set_defaults(handler=cmd_token)

    p = command(
        sub,
        "db",
        "the settings database's schema (Alembic migrations)",
        "  docqa db current\n  DOCQA_DATABASE_URL=postgresql+psycopg://docqa@db/docqa docqa db upgrade",
    )
    p.add_argument("action", choices=["upgrade", "current"], help="upgrade: apply migrations; current: show revision")
    p.set_defaults(handler=cmd_db)
