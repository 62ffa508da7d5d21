"""Shards of a folder: parsing ``I/N``, the split, and an ingest run limited to one shard."""

from __future__ import annotations

from pathlib import Path

import pytest

from acl.errors import InvalidArgument
from indexer.ingest.shards import WHOLE, Shard, shard_of
from service.access.admin import Admin
from service.config import StoreDefaults
from service.persistence.sql_settings import SqlSettingsRepository
from tests.fakes import FakeIndex
from tests.fakes_service import FakeEmbedder
from tests.unit.test_pipeline import STORE, ingestor


@pytest.mark.parametrize("text", ["x", "3/2", "1/0", "-1/2", "2", "1/2/3", "0/", "/2", "0 / 2", "1.0/2", "0/10001", ""])
def test_anything_but_i_of_n_is_refused(text: str) -> None:
    with pytest.raises(InvalidArgument):
        Shard.parse(text)


def test_i_of_n_parses() -> None:
    assert Shard.parse("1/4") == Shard(1, 4) and str(Shard.parse(" 0/1 ")) == "0/1" == str(WHOLE)


def test_the_split_is_a_stable_hash_of_the_path() -> None:
    # sha256, not Python's per-process hash: these values hold in every process and release.
    assert [shard_of(name, 4) for name in ("a.md", "finance/q3.md", "guide.txt", "dé/ja.md")] == [
        shard_of(name, 4) for name in ("a.md", "finance/q3.md", "guide.txt", "dé/ja.md")
    ]
    assert shard_of("finance/q3.md", 1) == 0
    assert {shard_of(f"doc{i}.md", 3) for i in range(50)} == {0, 1, 2}


def test_a_shard_indexes_and_removes_only_its_own_documents(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "acl.yaml").write_text("groups:\n  hr: [user:bob]\ndocuments:\n  - match: '**'\n    allow: [group:hr]\n")
    names = [f"doc{i}.md" for i in range(12)]
    for name in names:
        (root / name).write_text(f"# {name}\n\nText of {name}.\n")
    repo = SqlSettingsRepository.from_url("sqlite://")
    Admin(repo).ensure_store(STORE, "fake", StoreDefaults())
    index, embedder = FakeIndex(), FakeEmbedder()
    run = ingestor(index, repo, embedder)
    mine = sorted(n for n in names if shard_of(n, 2) == 0)
    theirs = sorted(set(names) - set(mine))
    assert 0 < len(mine) < len(names)
    assert sorted(run.index_folder(root, shard=Shard(1, 2)).indexed) == theirs
    assert sorted(d.id for d in repo.list_documents(STORE)) == theirs
    assert not repo.memberships(STORE)  # the store's groups are shard 0's to write, once
    assert sorted(run.index_folder(root, shard=Shard(0, 2)).indexed) == mine
    assert repo.memberships(STORE) == {"user:bob": frozenset({"group:hr"})}
    assert run.index_folder(root).unchanged == sorted(names)  # one whole run finds nothing to do
    for name in names:
        (root / name).unlink()
    assert sorted(run.index_folder(root, shard=Shard(1, 2)).removed) == theirs
    assert sorted(d.id for d in repo.list_documents(STORE)) == mine  # shard 0's are shard 0's to remove


def test_two_processes_creating_one_store_at_once_both_get_it() -> None:
    repo = SqlSettingsRepository.from_url("sqlite://")
    Admin(repo).ensure_store(STORE, "fake", StoreDefaults())  # the other shard, first
    real = repo.get_store
    looks = iter([None])  # this shard looked just before: no store yet, and its create collides

    def get_store(store_id: str) -> object:
        return next(looks, None) or real(store_id)

    repo.get_store = get_store  # type: ignore[method-assign,assignment]
    assert Admin(repo).ensure_store(STORE, "fake", StoreDefaults()).id == STORE
    with pytest.raises(InvalidArgument, match="embedding model"):
        Admin(repo).ensure_store(STORE, "another-model", StoreDefaults())


def test_a_deleted_folder_goes_shard_by_shard_and_its_groups_with_shard_0(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "acl.yaml").write_text("groups:\n  hr: [user:bob]\ndocuments:\n  - match: '**'\n    allow: [group:hr]\n")
    names = [f"doc{i}.md" for i in range(8)]
    for name in names:
        (root / name).write_text(f"# {name}\n\nText of {name}.\n")
    repo = SqlSettingsRepository.from_url("sqlite://")
    Admin(repo).ensure_store(STORE, "fake", StoreDefaults())
    run = ingestor(FakeIndex(), repo, FakeEmbedder())
    run.index_folder(root)
    for name in [*names, "acl.yaml"]:
        (root / name).unlink()
    root.rmdir()
    theirs = sorted(n for n in names if shard_of(n, 2) == 1)
    assert sorted(run.index_folder(root, shard=Shard(1, 2)).removed) == theirs
    assert repo.memberships(STORE)  # shard 0's to drop
    assert sorted(run.index_folder(root, shard=Shard(0, 2)).removed) == sorted(set(names) - set(theirs))
    assert not repo.memberships(STORE) and not repo.list_documents(STORE)
