"""Adversarial property test: no path of the query engine returns or sends an unreadable chunk.

Hypothesis generates users, nested and cyclic groups, allow/deny ACLs, and
revocations applied to the authoritative ACL only (the index copy left stale)
or to both; then every query class is run and checked against a reference
model of who may read what, computed here by a different algorithm — the
answer's chunks and its per-document groups alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acl.errors import NotFound
from acl.model import Acl
from service.domain.queries import Answer, Caller, DocumentQuery, MultiDocumentQuery, VectorQuery
from tests.unit.engine_world import STORE, make_world

USERS = [f"user:u{i}" for i in range(4)]
GROUPS = [f"group:g{i}" for i in range(4)]
PRINCIPALS = USERS + GROUPS + ["group:everyone"]
DOCS = [f"doc{i}" for i in range(5)]

acls = st.builds(
    lambda allow, deny: Acl(frozenset(allow), frozenset(deny)),
    st.sets(st.sampled_from(PRINCIPALS), max_size=3),
    st.sets(st.sampled_from(PRINCIPALS), max_size=2),
)
memberships = st.sets(st.tuples(st.sampled_from(GROUPS), st.sampled_from(USERS + GROUPS)), max_size=8)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("acl_db_only"), st.sampled_from(DOCS), acls),
        st.tuples(st.just("acl_both"), st.sampled_from(DOCS), acls),
        st.tuples(st.just("remove_member"), st.sampled_from(GROUPS), st.sampled_from(USERS + GROUPS)),
    ),
    max_size=4,
)


@dataclass
class Reference:
    edges: set[tuple[str, str]]
    acls: dict[str, Acl]

    def principals(self, user: str) -> set[str]:
        # Fixpoint over all edges (a different algorithm from the engine's BFS).
        have = {user, "group:everyone"}
        changed = True
        while changed:
            changed = False
            for group, member in self.edges:
                if member in have and group not in have:
                    have.add(group)
                    changed = True
        return have

    def readable(self, user: str) -> set[str]:
        mine = self.principals(user)
        return {
            d
            for d, acl in self.acls.items()
            if any(p in mine for p in acl.allow) and not any(p in mine for p in acl.deny)
        }


@pytest.mark.slow  # 2,000 examples: minutes; `pytest -m "not slow"` leaves it to the full run
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edges=memberships,
    doc_acls=st.lists(acls, min_size=len(DOCS), max_size=len(DOCS)),
    ops=operations,
    user=st.sampled_from(USERS),
    picked=st.lists(st.sampled_from(DOCS), min_size=1, max_size=3, unique=True),
)
def test_no_unreadable_chunk_reaches_caller_or_generator(
    edges: set[tuple[str, str]],
    doc_acls: list[Acl],
    ops: list[tuple[str, str, object]],
    user: str,
    picked: list[str],
) -> None:
    world = make_world(max_chunks=50)
    for group, member in edges:
        world.access.add_member(group, member, "test")
    for document_id, acl in zip(DOCS, doc_acls, strict=True):
        world.add(document_id, [f"{document_id} secret alpha", f"{document_id} secret beta"], acl)
    reference = Reference(set(edges), dict(zip(DOCS, doc_acls, strict=True)))
    index_in_sync = True
    for op, target, value in ops:
        if op == "remove_member":
            if (target, str(value)) in reference.edges:
                world.access.remove_member(target, str(value), "test")
            reference.edges.discard((target, str(value)))
        else:
            assert isinstance(value, Acl)
            world.access.override_acl(STORE, target, value, "test")
            reference.acls[target] = value
            if op == "acl_both":
                world.index.set_document_acl(STORE, target, value)
            else:
                index_in_sync = False
    readable = reference.readable(user)
    caller = Caller(user.removeprefix("user:"))

    def check_sent() -> None:
        for prompt in world.generator.prompts:
            for chunk in prompt.chunks:
                assert chunk.document_id in readable
                assert all(
                    other not in chunk.text for other in DOCS if other not in readable and other != chunk.document_id
                )
        world.generator.prompts.clear()

    def check_groups(answer: Answer) -> None:
        # The per-document groups hold exactly the answer's (readable) chunks, nothing more.
        assert {d.document_id for d in answer.documents} <= readable
        assert [c.chunk_id for d in answer.documents for c in d.chunks] == [
            c.chunk_id for d in answer.documents for c in answer.chunks if c.document_id == d.document_id
        ]
        assert sorted(c.chunk_id for d in answer.documents for c in d.chunks) == sorted(
            c.chunk_id for c in answer.chunks
        )

    if not readable:
        # A store the caller may read nothing of is NOT_FOUND in the words of an unknown store, on every query.
        for query in (
            VectorQuery(STORE, "secret", level=0),
            MultiDocumentQuery(STORE, "secret", tuple(picked), level=0),
            DocumentQuery(STORE, "secret", picked[0]),
        ):
            try:
                world.engine.ask(caller, query)
                raise AssertionError("a store read nothing of was queried without NotFound")
            except NotFound as exc:
                assert exc.message == f"store {STORE!r} not found"
        check_sent()
        return

    answer = world.engine.ask(caller, VectorQuery(STORE, "secret", level=0))
    got = {c.document_id for c in answer.chunks}
    assert got <= readable
    check_groups(answer)
    if index_in_sync:
        assert got == readable  # and nothing readable is lost
    check_sent()

    if set(picked) <= readable:
        answer = world.engine.ask(caller, MultiDocumentQuery(STORE, "secret", tuple(picked), level=0))
        assert {c.document_id for c in answer.chunks} <= readable
        check_groups(answer)
        answer = world.engine.ask(caller, DocumentQuery(STORE, "secret", picked[0]))
        assert {c.document_id for c in answer.chunks} == {picked[0]}
        assert [d.document_id for d in answer.documents] == [picked[0]]
    else:
        hidden = next(d for d in picked if d not in readable)
        try:
            world.engine.ask(caller, MultiDocumentQuery(STORE, "secret", tuple(picked), level=0))
            raise AssertionError("an unreadable document was queried without NotFound")
        except NotFound as exc:
            assert exc.message.endswith(f"not found in store {STORE!r}")
        try:
            world.engine.ask(caller, DocumentQuery(STORE, "secret", hidden))
            raise AssertionError("an unreadable document was queried without NotFound")
        except NotFound as exc:
            assert exc.message == f"document {hidden!r} not found in store {STORE!r}"
    check_sent()
