"""service.access.state: the one writer of ACLs and memberships, with provenance (issue 13), example by example."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acl.errors import InvalidArgument, NotFound
from acl.model import Acl
from indexer.index import StoreSpec
from indexer.ingest.pipeline import Ingestor
from service.access.state import AccessState
from service.domain.store import Store
from service.persistence.sql_settings import SqlSettingsRepository
from tests.fakes import FakeIndex
from tests.fakes_service import FakeEmbedder

ROOT = Path(__file__).resolve().parents[2]
WHEN = datetime(2026, 11, 23, 2, 0, tzinfo=UTC)
#: The repository methods that write ACL or membership rows.
WRITERS = {
    "save_document",
    "set_ingested_acl",
    "put_acl_override",
    "delete_acl_override",
    "add_admin_membership",
    "tombstone_membership",
    "release_membership",
    "replace_memberships",
}


def manifest(groups: str, allow: str = "group:finance") -> str:
    rules = f"  - match: 'finance/**'\n    allow: [{allow}]\n  - match: '**'\n    allow: [group:everyone]\n"
    return f"groups:\n{groups}\ndocuments:\n{rules}"


@pytest.fixture
def repo() -> SqlSettingsRepository:
    r = SqlSettingsRepository.from_url("sqlite://")
    for store in ("a", "b"):
        r.create_store(Store(store, store, "fake", 0.5, 0.1, 0.6, 8))
    return r


@pytest.fixture
def index() -> FakeIndex:
    index = FakeIndex()
    for store in ("a", "b"):
        index.ensure(StoreSpec(store, 64))
    return index


def folder(root: Path, text: str) -> Path:
    (root / "finance").mkdir(parents=True)
    (root / "acl.yaml").write_text(text)
    (root / "finance" / "q3.md").write_text("# Q3\n\nRevenue was 48 million euros.\n")
    (root / "guide.txt").write_text("Vacation is 25 days.\n")
    return root


def ingestor(repo: SqlSettingsRepository, index: FakeIndex, store: str = "a") -> Ingestor:
    access = AccessState(repo, index, clock=lambda: WHEN)
    return Ingestor(index=index, catalog=repo, access=access, embedder=FakeEmbedder(), store_id=store)


def index_acls(index: FakeIndex, store: str, document_id: str) -> set[Acl]:
    return {c.acl for c in index.chunks[store].values() if c.document_id == document_id}


def test_admin_override_survives_reindex_and_manifest_changes_until_reset(
    tmp_path: Path, repo: SqlSettingsRepository, index: FakeIndex
) -> None:
    root = folder(tmp_path / "a", manifest("  finance: [user:alice]"))
    ingestor(repo, index).index_folder(root)
    access = AccessState(repo, index, clock=lambda: WHEN)
    view = access.override_acl("a", "finance/q3.md", Acl.of(["user:carol"]), "cli:root")
    assert (view.source, view.changed_by, view.changed_at) == ("admin", "cli:root", WHEN)
    assert view.to_dict()["manifest"] == {"allow": ["group:finance"], "deny": []}

    (root / "acl.yaml").write_text(manifest("  finance: [user:alice]", allow="group:finance, user:zed"))
    (root / "finance" / "q3.md").write_text("# Q3\n\nRevenue was 49 million euros.\n")  # re-embedded too
    report = ingestor(repo, index).index_folder(root)
    assert report.indexed == ["finance/q3.md"]
    assert repo.acls("a", ["finance/q3.md"])["finance/q3.md"] == Acl.of(["user:carol"])
    assert index_acls(index, "a", "finance/q3.md") == {Acl.of(["user:carol"])}
    assert access.acl_view("a", "finance/q3.md").ingested == Acl.of(["group:finance", "user:zed"])

    back = access.reset_acl("a", "finance/q3.md")
    assert back.source == "manifest" and back.effective == Acl.of(["group:finance", "user:zed"])
    assert index_acls(index, "a", "finance/q3.md") == {Acl.of(["group:finance", "user:zed"])}


def test_override_outlives_the_document_leaving_and_coming_back(
    tmp_path: Path, repo: SqlSettingsRepository, index: FakeIndex
) -> None:
    root = folder(tmp_path / "a", manifest("  finance: [user:alice]"))
    ingestor(repo, index).index_folder(root)
    access = AccessState(repo, index)
    access.override_acl("a", "finance/q3.md", Acl(), "cli:root")  # nobody, in an emergency
    saved = (root / "finance" / "q3.md").read_text()
    (root / "finance" / "q3.md").unlink()
    assert ingestor(repo, index).index_folder(root).removed == ["finance/q3.md"]
    (root / "finance" / "q3.md").write_text(saved)
    ingestor(repo, index).index_folder(root)
    assert repo.acls("a", ["finance/q3.md"])["finance/q3.md"] == Acl()
    assert index_acls(index, "a", "finance/q3.md") == {Acl()}


def test_manifest_groups_hold_in_their_own_store_only(
    tmp_path: Path, repo: SqlSettingsRepository, index: FakeIndex
) -> None:
    ingestor(repo, index, "a").index_folder(folder(tmp_path / "a", manifest("  finance: [user:alice]")))
    ingestor(repo, index, "b").index_folder(folder(tmp_path / "b", manifest("  finance: [user:mallory]")))
    assert repo.memberships("a") == {"user:alice": frozenset({"group:finance"})}
    assert repo.memberships("b") == {"user:mallory": frozenset({"group:finance"})}
    assert repo.memberships() == {}  # the global directory is the admin's alone


def test_tombstone_beats_every_manifest_and_reindex_until_reset(
    tmp_path: Path, repo: SqlSettingsRepository, index: FakeIndex
) -> None:
    root = folder(tmp_path / "a", manifest("  finance: [user:alice, user:carol]"))
    ingestor(repo, index, "a").index_folder(root)
    ingestor(repo, index, "b").index_folder(folder(tmp_path / "b", manifest("  finance: [user:carol]")))
    access = AccessState(repo, index, clock=lambda: WHEN)
    access.add_member("group:finance", "user:carol", "cli:root")
    access.remove_member("group:finance", "user:carol", "cli:root")
    ingestor(repo, index, "a").index_folder(root)
    for store in ("a", "b", None):
        assert "user:carol" not in repo.memberships(store)
    [view] = [v for v in access.membership_views() if v.member == "user:carol"]
    assert view.tombstone is not None and view.tombstone.removed_by == "cli:root"
    assert {(r.scope, r.source) for r in view.rows} == {("a", "manifest"), ("b", "manifest")}  # admin row gone

    access.reset_member("group:finance", "user:carol")
    assert repo.memberships("a")["user:carol"] == {"group:finance"}
    with pytest.raises(NotFound):
        access.reset_member("group:finance", "user:carol")
    with pytest.raises(NotFound):
        access.remove_member("group:finance", "user:nobody", "cli:root")


def test_moved_folder_takes_over_the_store(tmp_path: Path, repo: SqlSettingsRepository, index: FakeIndex) -> None:
    old = folder(tmp_path / "old", manifest("  finance: [user:alice]"))
    ingestor(repo, index).index_folder(old)
    new = old.rename(tmp_path / "new")
    (new / "guide.txt").unlink()
    (new / "acl.yaml").write_text(manifest("  finance: [user:bob]"))
    report = ingestor(repo, index).index_folder(new)
    assert report.removed == ["guide.txt"] and report.indexed == ["finance/q3.md"]
    assert [d.id for d in repo.list_documents("a")] == ["finance/q3.md"]
    assert repo.get_document("a", "finance/q3.md").origin == f"folder:{new.resolve()}"  # type: ignore[union-attr]
    assert {c.document_id for c in index.chunks["a"].values()} == {"finance/q3.md"}
    assert repo.memberships("a") == {"user:bob": frozenset({"group:finance"})}


def test_removed_folder_takes_its_documents_and_groups_and_nothing_else(
    tmp_path: Path, repo: SqlSettingsRepository, index: FakeIndex
) -> None:
    import shutil

    root = folder(tmp_path / "a", manifest("  finance: [user:alice]"))
    ingestor(repo, index, "a").index_folder(root)
    ingestor(repo, index, "b").index_folder(folder(tmp_path / "b", manifest("  finance: [user:bob]")))
    AccessState(repo, index).add_member("group:finance", "user:carol", "cli:root")
    shutil.rmtree(root)
    report = ingestor(repo, index, "a").index_folder(root)
    assert sorted(report.removed) == ["finance/q3.md", "guide.txt"] and report.ok
    assert repo.list_documents("a") == [] and index.chunks["a"] == {}
    assert repo.memberships("a") == {"user:carol": frozenset({"group:finance"})}  # the admin's stays
    assert repo.memberships("b")["user:bob"] == {"group:finance"} and len(repo.list_documents("b")) == 2
    with pytest.raises(InvalidArgument, match="does not exist"):  # an unknown missing path: an error
        ingestor(repo, index, "a").index_folder(tmp_path / "never-was")


class AdminMidRun(AccessState):
    """An admin's override lands just after the pipeline read the ACLs in force (a real race, made certain)."""

    def __init__(self, repo: SqlSettingsRepository, index: FakeIndex) -> None:
        super().__init__(repo, index)
        self.pending = True

    def effective_acls(self, store_id: str, ingested: Mapping[str, Acl]) -> dict[str, Acl]:
        read = super().effective_acls(store_id, ingested)
        if self.pending and "finance/q3.md" in ingested:
            self.pending = False
            self.override_acl(store_id, "finance/q3.md", Acl.of(["user:carol"]), "cli:root")
        return read


def test_override_made_during_a_run_reaches_the_index_copy(
    tmp_path: Path, repo: SqlSettingsRepository, index: FakeIndex
) -> None:
    root = folder(tmp_path / "a", manifest("  finance: [user:alice]"))
    ingestor(repo, index).index_folder(root)
    (root / "finance" / "q3.md").write_text("# Q3\n\nRevenue was 50 million euros.\n")
    access = AdminMidRun(repo, index)
    run = Ingestor(index=index, catalog=repo, access=access, embedder=FakeEmbedder(), store_id="a")
    assert run.index_folder(root).indexed == ["finance/q3.md"] and not access.pending
    assert index_acls(index, "a", "finance/q3.md") == {Acl.of(["user:carol"])}


def test_only_service_access_writes_acls_and_memberships() -> None:
    """Every call of a writing repository method in the packages is in service/access/state.py."""
    callers: list[str] = []
    for package in ("acl", "indexer", "service"):
        for path in (ROOT / package).rglob("*.py"):
            relative = path.relative_to(ROOT).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in WRITERS
                    and relative != "service/access/state.py"
                ):
                    callers.append(f"{relative}:{node.lineno} {node.func.attr}")
    assert callers == []
