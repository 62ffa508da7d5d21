"""Adversarial property test of access state over time: admin changes, re-index runs, folder moves.

Hypothesis builds two stores whose manifests reuse the same group names, then
runs a random sequence of steps: admin ACL overrides and resets, admin
membership adds, removals (tombstones) and resets, manifest rewrites, files
removed and restored, folders moved or deleted, and re-index runs of the real Ingestor
(with a fake embedder). After every step, for every user and store, every
query class is run through the engine and checked against a reference model
of the authoritative state kept here by a different algorithm: nothing
unreadable comes back, every admin revocation still holds, a store's manifest
grants nothing in another store, and the index copy of every ACL is the
effective one.

CI runs ``DOCQA_ACCESS_EXAMPLES`` examples (default 150); set it higher for a
longer local run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acl.errors import InvalidArgument, NotFound
from acl.model import Acl
from indexer.index import StoreSpec
from indexer.ingest.pipeline import Ingestor
from service.access.state import AccessState
from service.domain.queries import Caller, DocumentQuery, MultiDocumentQuery, VectorQuery
from service.domain.store import Store
from service.persistence.sql_settings import SqlSettingsRepository
from service.query.engine import QueryEngine
from tests.fakes import FakeIndex
from tests.fakes_service import FakeEmbedder, RecordingGenerator

EXAMPLES = int(os.environ.get("DOCQA_ACCESS_EXAMPLES", "150"))

STORES = ("a", "b")
USERS = ("user:u0", "user:u1", "user:u2")
GROUPS = ("group:g0", "group:g1", "group:g2")
PRINCIPALS = (*USERS, *GROUPS, "group:everyone")
DOCS = ("d0.txt", "d1.txt", "d2.txt")
Edge = tuple[str, str]  # (group, member)

acls = st.builds(
    lambda allow, deny: Acl(frozenset(allow), frozenset(deny)),
    st.sets(st.sampled_from(PRINCIPALS), max_size=3),
    st.sets(st.sampled_from(PRINCIPALS), max_size=1),
)
edges = st.frozensets(st.tuples(st.sampled_from(GROUPS), st.sampled_from(USERS + GROUPS)), max_size=5)
manifests = st.tuples(edges, st.lists(acls, min_size=len(DOCS), max_size=len(DOCS)))
stores = st.sampled_from(STORES)
pairs = st.tuples(st.sampled_from(GROUPS), st.sampled_from(USERS + GROUPS))
steps = st.lists(
    st.one_of(
        st.tuples(st.just("index"), stores),
        st.tuples(st.just("manifest"), stores, manifests),
        st.tuples(st.just("acl_set"), stores, st.sampled_from(DOCS), acls),
        st.tuples(st.just("acl_reset"), stores, st.sampled_from(DOCS)),
        st.tuples(st.just("add_member"), pairs),
        st.tuples(st.just("remove_member"), pairs),
        st.tuples(st.just("reset_member"), pairs),
        st.tuples(st.just("toggle_file"), stores, st.sampled_from(DOCS)),
        st.tuples(st.just("move"), stores),
        st.tuples(st.just("remove_folder"), stores),
    ),
    min_size=1,
    max_size=8,
)


@dataclass
class Reference:
    """The authoritative state as the issue states it, kept as plain sets (no SQL, no BFS)."""

    manifest_edges: dict[str, frozenset[Edge]] = field(default_factory=dict)  # as last indexed, per store
    ingested: dict[str, dict[str, Acl]] = field(default_factory=dict)  # indexed documents' manifest ACLs
    overrides: dict[tuple[str, str], Acl] = field(default_factory=dict)
    admin_edges: set[Edge] = field(default_factory=set)
    tombstones: set[Edge] = field(default_factory=set)

    def edges(self, store: str) -> set[Edge]:
        return (self.admin_edges | set(self.manifest_edges.get(store, ()))) - self.tombstones

    def principals(self, user: str, store: str) -> set[str]:
        have = {user, "group:everyone"}
        grown = True
        while grown:
            grown = False
            for group, member in self.edges(store):
                if member in have and group not in have:
                    have.add(group)
                    grown = True
        return have

    def effective(self, store: str, document: str) -> Acl | None:
        if document not in self.ingested.get(store, {}):
            return None
        return self.overrides.get((store, document), self.ingested[store][document])

    def readable(self, user: str, store: str) -> set[str]:
        mine = self.principals(user, store)
        out = set()
        for document in self.ingested.get(store, {}):
            acl = self.effective(store, document)
            assert acl is not None
            if any(p in mine for p in acl.allow) and not any(p in mine for p in acl.deny):
                out.add(document)
        return out

    def has_row(self, edge: Edge) -> bool:
        return edge in self.admin_edges or any(edge in e for e in self.manifest_edges.values())


@dataclass
class Folder:
    path: Path
    manifest: tuple[frozenset[Edge], list[Acl]]
    present: set[str]
    moves: int = 0

    def write(self) -> None:
        groups: dict[str, list[str]] = {}
        for group, member in sorted(self.manifest[0]):
            groups.setdefault(group, []).append(member)
        rules = [
            {"match": doc, "allow": sorted(acl.allow), "deny": sorted(acl.deny)}
            for doc, acl in zip(DOCS, self.manifest[1], strict=True)
        ]
        (self.path / "acl.yaml").write_text(yaml.safe_dump({"groups": groups, "documents": rules}))
        for doc in DOCS:
            file = self.path / doc
            if doc in self.present and not file.exists():
                file.write_text(f"store {self.path.name[0]} {doc.removesuffix('.txt')} secret alpha\n")
            elif doc not in self.present and file.exists():
                file.unlink()


class World:
    def __init__(self, base: Path) -> None:
        self.repo = SqlSettingsRepository.from_url("sqlite://")
        self.index = FakeIndex()
        self.embedder = FakeEmbedder()
        self.access = AccessState(self.repo, self.index)
        self.engine = QueryEngine(
            repository=self.repo,
            index=self.index,
            embedder_for=lambda _: self.embedder,
            generator=RecordingGenerator(),
        )
        self.base = base
        self.folders: dict[str, Folder] = {}
        for store in STORES:
            self.repo.create_store(Store(store, store, "fake", 0.5, 0.1, 0.6, 50))
            self.index.ensure(StoreSpec(store, self.embedder.dimension))

    def ingestor(self, store: str) -> Ingestor:
        return Ingestor(index=self.index, catalog=self.repo, access=self.access, embedder=self.embedder, store_id=store)


def _index(world: World, ref: Reference, store: str) -> None:
    folder = world.folders[store]
    folder.write()
    report = world.ingestor(store).index_folder(folder.path)
    assert not report.failed
    edges_, rules = folder.manifest
    ref.manifest_edges[store] = edges_
    ref.ingested[store] = {doc: rules[DOCS.index(doc)] for doc in folder.present}


def _apply(world: World, ref: Reference, step: tuple[Any, ...]) -> None:
    kind = step[0]
    if kind == "index":
        _index(world, ref, step[1])
    elif kind == "manifest":
        world.folders[step[1]].manifest = step[2]  # on disk; in force after the next run
        world.folders[step[1]].write()
    elif kind == "toggle_file":
        world.folders[step[1]].present ^= {step[2]}
        world.folders[step[1]].write()
    elif kind == "move":
        folder = world.folders[step[1]]
        folder.moves += 1
        target = world.base / f"{step[1]}-moved-{folder.moves}"
        folder.path.rename(target)
        folder.path = target
        _index(world, ref, step[1])
    elif kind == "remove_folder":  # the folder is deleted, the nightly run indexes its path
        folder = world.folders[step[1]]
        shutil.rmtree(folder.path)
        if ref.ingested.get(step[1]):
            world.ingestor(step[1]).index_folder(folder.path)
            ref.manifest_edges[step[1]] = frozenset()
            ref.ingested[step[1]] = {}
        else:  # no document came from it: an unknown missing path is an error, and nothing changes
            try:
                world.ingestor(step[1]).index_folder(folder.path)
                raise AssertionError("expected InvalidArgument")
            except InvalidArgument:
                pass
        folder.path.mkdir()  # an admin puts it back; in force after the next run
        folder.write()
    elif kind == "acl_set":
        _, store, doc, acl = step
        if ref.effective(store, doc) is None:
            _expect_not_found(lambda: world.access.override_acl(store, doc, acl, "test:admin"))
        else:
            view = world.access.override_acl(store, doc, acl, "test:admin")
            assert view.effective == acl and view.source == "admin" and view.changed_by == "test:admin"
            ref.overrides[(store, doc)] = acl
    elif kind == "acl_reset":
        _, store, doc = step
        if ref.effective(store, doc) is None and (store, doc) not in ref.overrides:
            _expect_not_found(lambda: world.access.reset_acl(store, doc))
        else:
            world.access.reset_acl(store, doc)
            ref.overrides.pop((store, doc), None)
    elif kind == "add_member":
        group, member = step[1]
        world.access.add_member(group, member, "test:admin")
        ref.admin_edges.add((group, member))
        ref.tombstones.discard((group, member))
    elif kind == "remove_member":
        group, member = step[1]
        if ref.has_row((group, member)):
            world.access.remove_member(group, member, "test:admin")
            ref.tombstones.add((group, member))
            ref.admin_edges.discard((group, member))
        else:
            _expect_not_found(lambda: world.access.remove_member(group, member, "test:admin"))
    elif kind == "reset_member":
        group, member = step[1]
        if (group, member) in ref.tombstones or (group, member) in ref.admin_edges:
            world.access.reset_member(group, member)
            ref.tombstones.discard((group, member))
            ref.admin_edges.discard((group, member))
        else:
            _expect_not_found(lambda: world.access.reset_member(group, member))


def _expect_not_found(action: Any, *args: Any) -> None:
    try:
        action(*args)
    except NotFound:
        return
    raise AssertionError("expected NotFound")


def _check(world: World, ref: Reference) -> None:
    for store in STORES:
        indexed = ref.ingested.get(store, {})
        # The index copy of every ACL is the effective one (so the in-search filter is neither stale nor wider).
        for chunk in world.index.chunks[store].values():
            assert chunk.document_id in indexed, f"{store}: {chunk.document_id} left in the index"
            assert chunk.acl == ref.effective(store, chunk.document_id)
        assert {d.id for d in world.repo.list_documents(store)} == set(indexed)
        # Every admin revocation holds: no tombstoned pair counts in any store.
        directory = world.repo.memberships(store)
        for group, member in ref.tombstones:
            assert group not in directory.get(member, frozenset())
        for user in USERS:
            caller = Caller(user.removeprefix("user:"))
            assert world.engine.principals(caller, store) == ref.principals(user, store)
            readable = ref.readable(user, store)
            if not readable:  # a store read nothing of is NOT_FOUND, in the words of an unknown store
                for doc in DOCS:
                    for query in (VectorQuery(store, "secret alpha", level=0), DocumentQuery(store, "secret", doc)):
                        try:
                            world.engine.ask(caller, query)
                            raise AssertionError("expected NotFound")
                        except NotFound as exc:
                            assert exc.message == f"store {store!r} not found"
                continue
            answer = world.engine.ask(caller, VectorQuery(store, "secret alpha", level=0))
            got = {c.document_id for c in answer.chunks}
            assert got == readable, (store, user, got, readable)
            for source in answer.chunks:
                assert source.text.startswith(f"store {store} ")
            if readable:
                picked = tuple(sorted(readable))
                answer = world.engine.ask(caller, MultiDocumentQuery(store, "secret", picked, level=0))
                assert {c.document_id for c in answer.chunks} <= readable
            for doc in DOCS:
                query = DocumentQuery(store, "secret", doc)
                if doc in readable:
                    assert {c.document_id for c in world.engine.ask(caller, query).chunks} == {doc}
                else:
                    _expect_not_found(world.engine.ask, caller, query)
            hidden = sorted(set(DOCS) - readable)
            if hidden:  # one unreadable document among readable ones: NotFound, as if it did not exist
                multi = MultiDocumentQuery(store, "secret", (*sorted(readable), hidden[0]), level=0)
                _expect_not_found(world.engine.ask, caller, multi)


@pytest.mark.slow  # about two minutes on 2 busy cores; `pytest -m "not slow"` leaves it to the full run
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial=st.tuples(manifests, manifests), plan=steps)
def test_access_state_holds_over_admin_changes_and_reindex_runs(
    initial: tuple[Any, Any], plan: list[tuple[Any, ...]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        world = World(Path(tmp))
        ref = Reference()
        for store, manifest in zip(STORES, initial, strict=True):
            path = Path(tmp) / store
            path.mkdir()
            world.folders[store] = Folder(path, manifest, set(DOCS))
            _index(world, ref, store)
        _check(world, ref)
        for step in plan:
            _apply(world, ref, step)
            _check(world, ref)
        world.repo.close()
