"""Ids and principals are checked whole: a trailing newline (or any other junk) is refused everywhere."""

from __future__ import annotations

import time
from pathlib import Path

import jwt
import pytest

from acl.errors import InvalidArgument, Unauthenticated
from acl.model import Acl, user_principal, validate_principal
from indexer.index import StoreSpec
from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.opensearch.mapping import index_name
from indexer.ingest.manifest import parse_manifest
from indexer.store_ids import validate_store_id
from service.access.admin import Admin
from service.config import Settings, StoreDefaults
from service.domain import store as domain
from service.persistence.sql_settings import SqlSettingsRepository
from service.security.tokens import Authenticator

BAD_PRINCIPALS = ["user:alice\n", "group:hr\n", "\nuser:alice", "user:alice\r", "user:alice\x00", "user:"]
BAD_STORE_IDS = ["acme\n", "\nacme", "acme\r\n", "Acme", "-acme", "a" * 64, "", "ac/me", "acme.x"]


@pytest.mark.parametrize("principal", BAD_PRINCIPALS)
def test_bad_principals_are_refused(principal: str) -> None:
    with pytest.raises(InvalidArgument):
        validate_principal(principal)
    with pytest.raises(InvalidArgument):
        Acl.of([principal])
    with pytest.raises(InvalidArgument):
        parse_manifest({"groups": {"hr": [principal]}})
    with pytest.raises(InvalidArgument):
        parse_manifest({"documents": [{"match": "**", "allow": [principal]}]})


def test_user_ids_with_a_newline_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument):
        user_principal("alice\n")
    secret = "strict-ids-secret-" + "z" * 40
    now = int(time.time())
    claims = {"sub": "alice\n", "iat": now, "exp": now + 60, "iss": "https://idp", "aud": "docqa"}
    token = jwt.encode(claims, secret, algorithm="HS256")
    auth = {"hs256_secret": secret, "issuer": "https://idp", "audience": "docqa"}
    with pytest.raises(Unauthenticated):
        Authenticator(Settings(data_dir=tmp_path, auth=auth)).identify(f"Bearer {token}")


@pytest.mark.parametrize("store_id", BAD_STORE_IDS)
def test_bad_store_ids_are_refused_by_the_service_and_every_index(store_id: str) -> None:
    with pytest.raises(InvalidArgument):
        validate_store_id(store_id)
    with pytest.raises(InvalidArgument):
        EmbeddedIndex(None).ensure(StoreSpec(store_id, 4))
    with pytest.raises(InvalidArgument):
        Admin(SqlSettingsRepository.from_url("sqlite://")).ensure_store(store_id, "model", StoreDefaults())


@pytest.mark.parametrize("store_id", ["acme\n", "acme\r\n", "\nacme"])
def test_opensearch_index_names_are_checked_whole(store_id: str) -> None:
    with pytest.raises(InvalidArgument):
        index_name("docqa-", store_id)


def test_one_store_id_rule() -> None:
    assert domain.validate_store_id is validate_store_id
    for good in ("acme", "a", "hr-2026_q3", "0" * 63):
        assert validate_store_id(good) == good
