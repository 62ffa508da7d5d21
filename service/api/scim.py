"""SCIM 2.0 provisioning (RFC 7643/7644) at ``/scim/v2``: an identity provider (Okta, Entra ID, Ping…) creates,
replaces, patches and deletes DocQA's users and groups.

The protocol — schemas, filters (``userName eq "alice"``), pagination, PATCH add/remove of members, ETags,
the RFC's error responses with their ``scimType`` — is scim2-server's; DocQA gives it a storage that writes every
change through to the settings database (``service.persistence.sql_scim``) and rebuilds the memberships the
groups state there, in the same transaction, so that a query's principals follow the provider on the next query
after the write (on every replica: each checks the store's generation before it serves a request).

Names: a User's ``userName`` is ``user:<userName>`` and a Group's ``displayName`` is ``group:<displayName>``,
with every run of characters a principal cannot hold (spaces, slashes…) written ``-`` ("Finance Team" is
``group:Finance-Team``). A group that would contain itself, directly or through other groups, is refused
(400, ``invalidValue``) and nothing changes. Every request needs a bearer token an admin issued with
``docqa scim token`` (its SHA-256 is stored, never the token); ``/ServiceProviderConfig`` needs none.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from scim2_models import (
    AuthenticationScheme,
    External,
    InvalidValueException,
    Reference,
    Resource,
    ResourceType,
    UnauthorizedException,
)
from scim2_server.applications.asgi import ASGIApplication
from scim2_server.memory import AsyncInMemoryStorage, InMemoryStorage
from scim2_server.requests import ScimRequest
from scim2_server.service import ScimService
from scim2_server.utils import load_default_provider
from starlette.routing import BaseRoute, Mount
from starlette.types import ASGIApp

from service.persistence.sql_scim import SqlScimRows

if TYPE_CHECKING:
    from service.bootstrap import App

log = logging.getLogger("docqa.scim")

_NOT_IN_A_PRINCIPAL = re.compile(r"[^A-Za-z0-9._@+\-]+")


def principal_name(name: str) -> str:
    """A SCIM name as a principal's id: each run of other characters is ``-`` (at most 200 characters)."""
    return _NOT_IN_A_PRINCIPAL.sub("-", name).strip("-")[:200] or "-"


class DurableStorage(InMemoryStorage):
    """scim2-server's in-memory storage, written through to the settings database and read again whenever
    another process wrote there (the stored generation moved)."""

    def __init__(self, rows: SqlScimRows, service: ScimService) -> None:
        super().__init__()
        self._rows = rows
        self._service = service
        self._generation = -1

    @contextmanager
    def operation(self) -> Iterator[None]:
        with self.lock:
            if self._rows.generation() != self._generation:
                self._reload()
            yield

    def _reload(self) -> None:
        models = {rt.name: self._service.get_model(rt) for rt in self._service.provider.resource_types}
        generation, rows = self._rows.resources()
        self.resources = [models[kind].model_validate_json(body) for kind, body in rows if kind in models]
        self._generation = generation

    def create(self, resource_type: ResourceType, resource: Resource[Any]) -> Resource[Any]:
        with self.lock:
            created = super().create(resource_type, resource)
            self._persist(stored=[created])
            return created

    def update(
        self, resource_type: ResourceType, resource: Resource[Any], *, expected_version: str | None = None
    ) -> Resource[Any]:
        with self.lock:
            updated = super().update(resource_type, resource, expected_version=expected_version)
            self._persist(stored=[updated])
            return updated

    def delete(self, resource_type: ResourceType, resource_id: str, *, expected_version: str | None = None) -> None:
        with self.lock:
            super().delete(resource_type, resource_id, expected_version=expected_version)
            self._persist(removed=[resource_id])

    def _persist(self, stored: list[Resource[Any]] = (), removed: list[str] = ()) -> None:  # type: ignore[assignment]
        """Write the change and the memberships it leaves; on any failure the memory is read again from the
        database, so that what was refused is not served."""
        try:
            memberships = self._memberships()
            bodies = {r.id: (str(r.meta.resource_type), r.model_dump_json()) for r in stored if r.id and r.meta}
            self._generation = self._rows.write(bodies, removed, memberships)
        except BaseException:
            self._reload()
            raise

    def _memberships(self) -> set[tuple[str, str]]:
        """(group, member) pairs of every stored Group; a group reaching itself is ``invalidValue``. (The
        provider's models are built from its schemas, so a resource is told by its type's name.)"""
        names: dict[str, str] = {}
        groups: list[Any] = []
        for resource in self.resources:
            kind = resource.meta.resource_type if resource.meta else None
            if kind == "User" and resource.id and getattr(resource, "user_name", None):
                names[resource.id] = f"user:{principal_name(resource.user_name)}"  # type: ignore[attr-defined]
            elif kind == "Group" and resource.id and getattr(resource, "display_name", None):
                names[resource.id] = f"group:{principal_name(resource.display_name)}"  # type: ignore[attr-defined]
                groups.append(resource)
        pairs = {
            (names[g.id], names[m.value])
            for g in groups
            for m in (g.members or ())
            if m.value in names and g.id in names
        }
        _refuse_cycles(pairs)
        return pairs


def _refuse_cycles(pairs: set[tuple[str, str]]) -> None:
    parents: dict[str, set[str]] = {}
    for group, member in pairs:
        parents.setdefault(member, set()).add(group)
    for start in {g for g, _ in pairs}:
        seen, frontier = set(), [start]
        while frontier:
            for group in parents.get(frontier.pop(), ()):
                if group == start:
                    raise InvalidValueException(detail=f"{start} would be a member of itself")
                if group not in seen:
                    seen.add(group)
                    frontier.append(group)


BEARER = AuthenticationScheme(
    type=AuthenticationScheme.Type.oauthbearertoken,
    name="bearer token",
    description="a token issued with `docqa scim token`",
    spec_uri=Reference[External]("https://datatracker.ietf.org/doc/html/rfc6750"),
)


class DocQAScim(ASGIApplication):
    """The SCIM application: bearer tokens from the settings database."""

    def __init__(self, rows: SqlScimRows) -> None:
        provider = load_default_provider()
        if provider.config is not None:
            provider.config.authentication_schemes = [BEARER]
        service = ScimService(provider)
        super().__init__(AsyncInMemoryStorage(DurableStorage(rows, service)), provider, service)
        self._rows = rows

    def check_auth(self, request: ScimRequest) -> None:
        scheme, _, token = (request.header("Authorization") or "").partition(" ")
        if scheme.lower() != "bearer" or not token or not self._rows.token_valid(token.strip()):
            raise UnauthorizedException


def scim_rows(app: App) -> SqlScimRows:
    app.repository  # noqa: B018 - opens (and on a laptop migrates) the settings database first
    engine = getattr(app.repository, "engine", None)
    if engine is None:  # pragma: no cover - every shipped repository is SQL
        raise RuntimeError("SCIM needs the SQL settings database")
    return SqlScimRows(engine)


def scim_routes(app: App) -> list[BaseRoute]:
    """``/scim/v2/…`` when ``server.scim`` is on (the default), else nothing."""
    if not app.settings.server.scim:
        return []
    return [Mount("/scim", app=cast(ASGIApp, DocQAScim(scim_rows(app))))]


def issue_token(app: App, actor: str) -> str:
    """A new SCIM bearer token (shown once; its SHA-256 is stored)."""
    import secrets

    token = secrets.token_urlsafe(32)
    scim_rows(app).add_token(token, actor, datetime.now(UTC))
    return token
