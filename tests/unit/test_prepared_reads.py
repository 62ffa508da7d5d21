"""The settings database's reads on a question's path run statements built once (``sql_settings``): each call
still reads the rows as they are then, so a revoked reader is refused by the very next question."""

from __future__ import annotations

from datetime import UTC, datetime

from acl.model import Acl
from indexer.documents import DocumentRecord
from service.domain.store import Store
from service.persistence.ports import AclOverride
from service.persistence.sql_settings import SqlSettingsRepository

ALICE = frozenset({"user:alice", "group:everyone"})
BOB = frozenset({"user:bob", "group:everyone"})


def test_a_revoked_reader_loses_the_store_and_the_document_at_once() -> None:
    repo = SqlSettingsRepository.from_url("sqlite://")
    repo.create_store(Store("s", "s", "fake", 0.5, 0.1, 0.6, 8))
    repo.save_document(DocumentRecord("s", "d", "D", "file:///d", "h", "text", Acl.of(["user:alice"])))
    assert repo.store_for_reader("s", ALICE) is not None and repo.store_for_reader("s", BOB) is None
    assert repo.acls("s", ["d"])["d"].permits(ALICE)

    repo.put_acl_override("s", "d", AclOverride(Acl.of(["user:bob"]), "root", datetime(2026, 11, 29, tzinfo=UTC)))
    assert repo.store_for_reader("s", ALICE) is None and repo.store_for_reader("s", BOB) is not None
    assert not repo.acls("s", ["d"])["d"].permits(ALICE) and repo.acls("s", ["d"])["d"].permits(BOB)

    repo.delete_acl_override("s", "d")
    repo.set_ingested_acl("s", "d", Acl.of(["group:everyone"], deny=["user:alice"]))
    assert repo.store_for_reader("s", ALICE) is None and repo.store_for_reader("s", BOB) is not None
    assert not repo.acls("s", ["d"])["d"].permits(ALICE)
