"""The authoritative ACL read (``SqlSettingsRepository.acls``) against a model of what it must answer.

Every question's access check reads it: which documents exist, their ingested ACL, and the administrator's
override that replaces it (one without entries lets nobody read). It reads all three in one statement when no
override is involved, so the cases that matter are mixed: documents with and without rows or overrides,
overrides on documents that do not exist, another store's documents, duplicate and unknown ids.
"""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from acl.model import Acl
from indexer.documents import DocumentRecord
from service.domain.store import Store
from service.persistence.ports import AclOverride
from service.persistence.sql_settings import SqlSettingsRepository

STORES = ("a", "b")
DOCS = tuple(f"d{i}" for i in range(6))
PRINCIPALS = ("user:alice", "user:bob", "group:hr", "group:everyone")

principal_sets = st.frozensets(st.sampled_from(PRINCIPALS), max_size=3)
acls = st.builds(Acl, principal_sets, principal_sets)
#: Per store and document: (exists, ingested ACL, override or None).
documents = st.fixed_dictionaries(
    {(store, doc): st.tuples(st.booleans(), acls, st.none() | acls) for store in STORES for doc in DOCS}
)
asked = st.lists(st.sampled_from((*DOCS, "unknown")), max_size=12)


@settings(max_examples=150, deadline=None)
@given(documents, asked, st.sampled_from(STORES))
def test_acls_answer_as_the_model_does(state: dict[tuple[str, str], tuple[bool, Acl, Acl | None]], ids: list[str],
                                       store: str) -> None:  # fmt: skip
    repo = SqlSettingsRepository.from_url("sqlite://")
    for name in STORES:
        repo.create_store(Store(name, name, "fake", 0.5, 0.1, 0.6, 8))
    when = datetime(2026, 11, 24, tzinfo=UTC)
    for (name, doc), (exists, ingested, override) in state.items():
        if exists:
            repo.save_document(DocumentRecord(name, doc, doc.upper(), f"file:///{doc}", "h", "text", ingested))
        if override is not None:  # an override may name a document that is not (or no longer) there
            repo.put_acl_override(name, doc, AclOverride(override, "root", when))

    expected = {}
    for doc in dict.fromkeys(ids):
        exists, ingested, override = state.get((store, doc), (False, Acl(), None))
        if exists:
            expected[doc] = override if override is not None else ingested
    got = repo.acls(store, ids)
    assert dict(got) == expected
    assert list(got) == list(expected)  # in the order asked, each once
