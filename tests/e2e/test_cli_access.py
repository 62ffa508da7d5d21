"""Issue 13 through the real CLI: admin changes outlive re-indexing, resets hand back, manifests stay in their store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli import QUESTION, ROOT, run

FINANCE = "finance/q3-results.md"


def ask(data_dir: Path, user: str, store: str = "acme") -> set[str]:
    out = run(data_dir, "ask", QUESTION, "--store", store, "--as", user, "--json", "--no-llm", "--level", "0").stdout
    return {c["document_id"] for c in json.loads(out)["chunks"]}


def show(data_dir: Path, document_id: str = FINANCE) -> dict[str, Any]:
    return json.loads(run(data_dir, "acl", "show", document_id, "--store", "acme").stdout)  # type: ignore[no-any-return]


def index(data_dir: Path, folder: Path, store: str = "acme") -> str:
    return run(data_dir, "index", str(folder), "--store", store, "--quiet").stdout


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("corpus") / "acme"
    shutil.copytree(ROOT / "examples" / "acme", target)
    return target


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> Path:
    data = tmp_path_factory.mktemp("data")
    assert "7 indexed" in index(data, corpus)
    return data


def test_acl_override_survives_reindex_until_reset(data_dir: Path, corpus: Path) -> None:
    assert show(data_dir) == {
        "store": "acme",
        "document_id": FINANCE,
        "allow": ["group:finance"],
        "deny": ["user:mallory"],
        "source": "manifest",
    }
    run(data_dir, "acl", "set", FINANCE, "--allow", "user:carol", env={"DOCQA_ACTOR": "root"})
    assert "0 ACL updated" in index(data_dir, corpus)  # the nightly run: the manifest still says group:finance
    shown = show(data_dir)
    assert shown["allow"] == ["user:carol"] and shown["deny"] == [] and shown["source"] == "admin"
    assert shown["changed_by"] == "cli:root" and shown["changed_at"]
    assert shown["manifest"] == {"allow": ["group:finance"], "deny": ["user:mallory"]}
    assert FINANCE not in ask(data_dir, "alice")
    assert FINANCE in ask(data_dir, "carol")

    reset = json.loads(run(data_dir, "acl", "reset", FINANCE).stdout)
    assert reset["source"] == "manifest" and reset["allow"] == ["group:finance"]
    assert FINANCE in ask(data_dir, "alice")


def test_group_removal_is_a_tombstone_until_reset(data_dir: Path, corpus: Path) -> None:
    assert FINANCE in ask(data_dir, "carol")  # carol is in auditors by the acme manifest
    run(data_dir, "groups", "remove-member", "auditors", "user:carol")
    index(data_dir, corpus)
    assert FINANCE not in ask(data_dir, "carol")
    lines = run(data_dir, "groups", "list", "--provenance").stdout
    assert "group:auditors user:carol: manifest (store acme); REMOVED by cli:" in lines
    assert "user:carol" not in run(data_dir, "groups", "list", "--store", "acme").stdout

    run(data_dir, "groups", "reset", "auditors", "user:carol")
    assert FINANCE in ask(data_dir, "carol")
    failed = run(data_dir, "groups", "reset", "auditors", "user:carol", check=False)
    assert failed.returncode == 3 and "no admin change" in failed.stderr


def test_another_stores_manifest_cannot_grant_this_stores_documents(data_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "acl.yaml").write_text(
        "groups:\n  finance: [user:eve]\ndocuments:\n  - match: '**'\n    allow: [group:finance]\n"
    )
    (other / "notes.md").write_text("# Notes\n\nThe third quarter revenue notes of the other team.\n")
    assert "1 indexed" in index(data_dir, other, "other")
    assert ask(data_dir, "eve", "other") == {"notes.md"}
    assert not any(d.startswith("finance/") for d in ask(data_dir, "eve"))
    assert "user:eve" not in run(data_dir, "groups", "list", "--store", "acme").stdout
    assert "user:eve" in run(data_dir, "groups", "list", "--store", "other").stdout
    listing = run(data_dir, "groups", "list").stdout.splitlines()
    assert "group:finance (store other): user:eve" in listing
    assert not any("user:eve" in line for line in listing if "(global)" in line)  # the global directory


def test_moved_folder_takes_over_and_the_old_documents_go(data_dir: Path, corpus: Path, tmp_path: Path) -> None:
    moved = tmp_path / "acme-moved"
    shutil.copytree(corpus, moved)
    (moved / "handbook" / "expenses.md").unlink()
    out = index(data_dir, moved)
    assert "1 removed" in out and "6 indexed" in out  # the same paths, taken over by the new folder
    stores = {s["id"]: s for s in json.loads(run(data_dir, "stores", "--json").stdout)}
    assert stores["acme"]["documents"] == 6
    again = index(data_dir, moved)
    assert "0 indexed" in again and "6 unchanged" in again
    assert FINANCE in ask(data_dir, "alice")  # the manifest's groups came along with the folder


def test_a_deleted_folder_takes_its_documents_and_nothing_else(tmp_path: Path, corpus: Path) -> None:
    data = tmp_path / "data"
    folder = tmp_path / "gone"
    shutil.copytree(corpus, folder)
    index(data, folder, store="gone")
    index(data, corpus, store="kept")
    shutil.rmtree(folder)
    out = index(data, folder, store="gone")
    assert "7 removed" in out and "0 indexed" in out
    stores = {s["id"]: s for s in json.loads(run(data, "stores", "--json").stdout)}
    assert stores["gone"]["documents"] == 0 and stores["kept"]["documents"] == 7
    never = run(data, "index", str(tmp_path / "never-was"), "--store", "kept", check=False)
    assert never.returncode == 2 and "does not exist" in never.stderr


def test_acl_set_help_says_it_replaces_the_whole_acl(data_dir: Path) -> None:
    text = " ".join(run(data_dir, "acl", "set", "--help").stdout.split())
    assert "WHOLE ACL" in text and "acl reset" in text
