"""Adversarial property test of hybrid retrieval: no fusion method lets an unreadable chunk out.

The worlds of ``test_access_property`` (users, nested and cyclic groups, allow/deny ACLs, revocations in the
authoritative ACL only or in the index too), with the store's fusion method and lexical weight drawn as well,
and questions that are words of the documents, words of none, or query syntax. Every answer and every prompt
holds readable chunks only; while the index is in step, the answer holds exactly the readable chunks the
method finds (so it neither hides a readable chunk nor counts an unreadable one).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acl.errors import InvalidArgument, NotFound
from acl.model import Acl
from indexer.index.lexical import query_terms
from service.domain.queries import Caller, MultiDocumentQuery, VectorQuery
from service.history.rewrite import says_nothing
from tests.unit import test_access_property as base
from tests.unit.engine_world import STORE, make_world

QUESTIONS = ["secret", "alpha", "doc1 beta", "DOC3", "zzz nothing", '"alpha" OR NEAR(beta', "", "the of"]


def _words(document_id: str, text: str) -> set[str]:
    # What the fake index's lexical search reads of a chunk: text, title (the id in capitals), heading (the id).
    return set(re.findall(r"[^\W_]+", f"{text} {document_id.upper()} {document_id}".lower()))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edges=base.memberships,
    doc_acls=st.lists(base.acls, min_size=len(base.DOCS), max_size=len(base.DOCS)),
    ops=base.operations,
    user=st.sampled_from(base.USERS),
    picked=st.lists(st.sampled_from(base.DOCS), min_size=1, max_size=3, unique=True),
    fusion=st.sampled_from(["rrf", "weighted", "dense", "lexical"]),
    weight=st.floats(0.0, 1.0),
    question=st.sampled_from(QUESTIONS),
)
def test_no_fusion_lets_an_unreadable_chunk_out(
    edges: set[tuple[str, str]],
    doc_acls: list[Acl],
    ops: list[tuple[str, str, object]],
    user: str,
    picked: list[str],
    fusion: str,
    weight: float,
    question: str,
) -> None:
    world = make_world(max_chunks=50)
    world.repo.update_store(STORE, fusion=fusion, lexical_weight=weight)
    for group, member in edges:
        world.access.add_member(group, member, "test")
    texts: dict[str, list[str]] = {}
    for document_id, acl in zip(base.DOCS, doc_acls, strict=True):
        texts[document_id] = [f"{document_id} secret alpha", f"{document_id} secret beta"]
        world.add(document_id, texts[document_id], acl)
    reference = base.Reference(set(edges), dict(zip(base.DOCS, doc_acls, strict=True)))
    in_sync = True
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
                in_sync = False
    readable = reference.readable(user)
    caller = Caller(user.removeprefix("user:"))

    def check_sent() -> None:
        for prompt in world.generator.prompts:
            for chunk in prompt.chunks:
                assert chunk.document_id in readable
                assert all(d not in chunk.text for d in base.DOCS if d not in readable and d != chunk.document_id)
        world.generator.prompts.clear()

    if not readable:  # a store read nothing of is NOT_FOUND as an unknown one, whatever is asked
        with pytest.raises(NotFound, match=re.escape(f"store {STORE!r} not found")):
            world.engine.ask(caller, VectorQuery(STORE, question or "?", level=0))
        assert world.generator.prompts == []
        return
    if says_nothing(question or "?"):
        # "?" and "the of" have no word to search for: refused before any work, whoever asks.
        with pytest.raises(InvalidArgument, match="please ask a full question"):
            world.engine.ask(caller, VectorQuery(STORE, question or "?", level=0))
        assert world.generator.prompts == []
        return
    answer = world.engine.ask(caller, VectorQuery(STORE, question or "?", level=0))
    got = {c.chunk_id for c in answer.chunks}
    assert {c.document_id for c in answer.chunks} <= readable
    if in_sync:
        terms = set(query_terms(question or "?"))
        every = {f"{d}#{o}" for d in readable for o in (0, 1)}
        found = {f"{d}#{o}" for d in readable for o, text in enumerate(texts[d]) if terms & _words(d, text)}
        assert got == (found if fusion == "lexical" else every)
    check_sent()

    scope = [d for d in picked if d in readable]
    if scope:
        answer = world.engine.ask(caller, MultiDocumentQuery(STORE, question or "?", tuple(scope), level=0))
        assert {c.document_id for c in answer.chunks} <= set(scope)
    check_sent()
