"""The folder scan cannot leave its folder: links, special files and odd names are refused by name."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from acl.errors import InvalidArgument
from acl.model import EVERYONE
from indexer.errors import LoadError, UnsafePath
from indexer.index import StoreSpec
from indexer.ingest.pipeline import Ingestor
from indexer.ingest.safe_scan import read_inside, shown
from service.access.state import AccessState
from service.domain.store import Store
from service.persistence.sql_settings import SqlSettingsRepository
from tests.fakes import FakeIndex
from tests.fakes_service import FakeEmbedder

STORE = "docs"
MANIFEST = """
groups:
  hr: [user:hilda]
documents:
  - match: "hr/**"
    allow: [group:hr]
  - match: "public/**"
    allow: [group:everyone]
"""


@pytest.fixture
def repo() -> SqlSettingsRepository:
    r = SqlSettingsRepository.from_url("sqlite://")
    r.create_store(Store(STORE, STORE, "fake", 0.5, 0.1, 0.6, 8))
    return r


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "data" / "jwt-secret"
    secret.parent.mkdir()
    secret.write_text("hs256-signing-secret-do-not-leak\n")
    return secret


@pytest.fixture
def folder(tmp_path: Path, outside: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "hr").mkdir(parents=True)
    (root / "public").mkdir()
    (root / "acl.yaml").write_text(MANIFEST)
    (root / "hr" / "salaries.md").write_text("# Salaries\n\nHilda earns 91000 euros.\n")
    (root / "public" / "welcome.md").write_text("# Welcome\n\nThe canteen opens at noon.\n")
    (root / "public" / "x.md").symlink_to("../hr/salaries.md")
    (root / "public" / "secret-link.txt").symlink_to(outside)
    (root / "public" / "environ.txt").symlink_to("/proc/self/environ")
    (root / "public" / "hrdir").symlink_to(root / "hr", target_is_directory=True)
    os.mkfifo(root / "public" / "pipe.txt")
    (root / "public" / "evil\nname.md").write_text("text under a name no glob can match\n")
    (root / "public" / b"latin\xe9.md".decode("utf-8", "surrogateescape")).write_text("not UTF-8 name\n")
    return root


def ingestor(index: FakeIndex, repo: SqlSettingsRepository) -> Ingestor:
    embedder = FakeEmbedder()
    index.ensure(StoreSpec(STORE, embedder.dimension))
    return Ingestor(index=index, catalog=repo, access=AccessState(repo, index), embedder=embedder, store_id=STORE)


def readable_texts(index: FakeIndex, principals: list[str]) -> str:
    hits = index.exact(
        STORE, np.eye(1, 64, dtype=np.float32)[0], 10_000, {"field": "acl_allow", "operator": "in", "value": principals}
    )
    return "\n".join(h.chunk.text for h in hits)


def test_links_special_files_and_odd_names_are_refused_by_name(folder: Path, repo: SqlSettingsRepository) -> None:
    index = FakeIndex()
    report = ingestor(index, repo).index_folder(folder)
    assert sorted(report.indexed) == ["hr/salaries.md", "public/welcome.md"]
    assert report.refused == {
        "public/x.md": "symbolic link (not followed)",
        "public/secret-link.txt": "symbolic link (not followed)",
        "public/environ.txt": "symbolic link (not followed)",
        "public/hrdir": "symbolic link to a folder (not followed)",
        "public/pipe.txt": "not a regular file (FIFO)",
        "public/evil\\nname.md": "file name holds a control character (no ACL rule can match it)",
        "public/latin\\xe9.md": "file name is not valid UTF-8 (no ACL rule can match it)",
    }
    everyone = readable_texts(index, ["user:bob", EVERYONE])
    assert "canteen" in everyone
    assert "91000" not in everyone and "hs256" not in everyone and "PATH=" not in everyone
    assert "91000" in readable_texts(index, ["group:hr"])
    assert {d.id for d in repo.list_documents(STORE)} == {"hr/salaries.md", "public/welcome.md"}


def test_a_link_indexed_before_is_removed_on_the_next_run(folder: Path, repo: SqlSettingsRepository) -> None:
    index = FakeIndex()
    link = folder / "public" / "x.md"
    link.unlink()
    link.write_text("# Harmless\n\nFor now a real file.\n")
    ingestor(index, repo).index_folder(folder)
    assert repo.get_document(STORE, "public/x.md") is not None
    link.unlink()
    link.symlink_to("../hr/salaries.md")
    report = ingestor(index, repo).index_folder(folder)
    assert "public/x.md" in report.removed and report.refused["public/x.md"] == "symbolic link (not followed)"
    assert repo.get_document(STORE, "public/x.md") is None
    assert "91000" not in readable_texts(index, [EVERYONE])


def test_manifest_through_a_link_is_refused(tmp_path: Path, folder: Path, repo: SqlSettingsRepository) -> None:
    real = tmp_path / "elsewhere.yaml"
    real.write_text("documents:\n  - match: '**'\n    allow: [group:everyone]\n")
    (folder / "acl.yaml").unlink()
    (folder / "acl.yaml").symlink_to(real)
    with pytest.raises(InvalidArgument, match="symbolic link"):
        ingestor(FakeIndex(), repo).index_folder(folder)
    with pytest.raises(InvalidArgument, match="symbolic link"):
        ingestor(FakeIndex(), repo).index_folder(folder, folder / "acl.yaml")


def test_read_inside_never_leaves_the_folder(folder: Path) -> None:
    assert b"canteen" in read_inside(folder, "public/welcome.md")
    for bad in ("public/x.md", "public/hrdir/salaries.md", "public/pipe.txt", "../data/jwt-secret", "/etc/passwd", ""):
        with pytest.raises(UnsafePath):
            read_inside(folder, bad)


def test_shown_keeps_one_line() -> None:
    assert shown("a\nb\\c\x7f") == "a\\nb\\\\c\\x7f"


def test_an_unreadable_file_fails_by_name_and_is_not_refused(folder: Path, repo: SqlSettingsRepository) -> None:
    with pytest.raises(LoadError) as info:
        read_inside(folder, "public/gone.md")
    assert not isinstance(info.value, UnsafePath) and "gone.md" in info.value.message


def test_a_file_no_rule_matches_is_named(folder: Path, repo: SqlSettingsRepository) -> None:
    (folder / "stray.md").write_text("# Stray\n\nNo rule covers this file.\n")
    index = FakeIndex()
    report = ingestor(index, repo).index_folder(folder)
    assert report.unmatched == ["stray.md"] and "stray.md" in report.indexed
    assert "Stray" not in readable_texts(index, ["user:bob", EVERYONE, "group:hr"])


def test_a_hard_link_to_a_file_outside_is_refused(
    tmp_path: Path, folder: Path, outside: Path, repo: SqlSettingsRepository
) -> None:
    # A hard link is a regular file, so O_NOFOLLOW and the /proc/self/fd check both let it through:
    # the JWT secret (or another folder's salaries) would be indexed under this folder's rules.
    os.link(outside, folder / "public" / "notes.md")
    salaries = tmp_path / "hr-folder" / "salaries.md"
    salaries.parent.mkdir()
    salaries.write_text("# Pay\n\nThe CEO earns 987654 euros.\n")
    os.link(salaries, folder / "public" / "pay.md")
    index = FakeIndex()
    report = ingestor(index, repo).index_folder(folder)
    assert report.refused["public/notes.md"].startswith("hard link")
    assert report.refused["public/pay.md"].startswith("hard link")
    assert "public/notes.md" not in report.indexed and "public/pay.md" not in report.indexed
    everyone = readable_texts(index, ["user:bob", EVERYONE])
    assert "hs256" not in everyone and "987654" not in everyone
    with pytest.raises(UnsafePath, match="hard link"):
        read_inside(folder, "public/pay.md")


def test_an_indexed_file_replaced_by_a_hard_link_is_removed(
    folder: Path, outside: Path, repo: SqlSettingsRepository
) -> None:
    index = FakeIndex()
    run = ingestor(index, repo)
    (folder / "public" / "notes.md").write_text("# Notes\n\nHarmless for now.\n")
    run.index_folder(folder)
    assert repo.get_document(STORE, "public/notes.md") is not None
    (folder / "public" / "notes.md").unlink()
    os.link(outside, folder / "public" / "notes.md")
    report = run.index_folder(folder)
    assert "public/notes.md" in report.removed and report.refused["public/notes.md"].startswith("hard link")
    assert "hs256" not in readable_texts(index, [EVERYONE])


def test_a_folder_swapped_for_a_link_after_it_was_resolved_is_refused(
    tmp_path: Path, folder: Path, repo: SqlSettingsRepository
) -> None:
    # Whoever may write to the folder's parent swaps the folder for a link to a stricter one
    # between the scan and the reads: every read must still come from the folder that was named.
    stricter = tmp_path / "hr-only"
    (stricter / "public").mkdir(parents=True)
    (stricter / "public" / "welcome.md").write_text("# Pay\n\nThe CEO earns 987654 euros.\n")
    root = folder.resolve()
    assert b"canteen" in read_inside(root, "public/welcome.md")
    os.rename(root, tmp_path / "corpus-moved")
    root.symlink_to(stricter, target_is_directory=True)
    with pytest.raises(UnsafePath, match="outside the folder"):
        read_inside(root, "public/welcome.md")


def test_a_manifest_in_a_folder_reached_through_a_link_is_still_read(tmp_path: Path, folder: Path) -> None:
    from indexer.ingest.manifest import load_manifest

    via = tmp_path / "via"
    via.symlink_to(folder, target_is_directory=True)
    assert load_manifest(via / "acl.yaml").rule_for("hr/salaries.md") is not None
