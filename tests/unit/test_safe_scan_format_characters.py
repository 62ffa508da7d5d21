"""Names holding invisible format characters (Unicode Cf: zero-width, bidi controls) are refused by name, as
control characters are: ``finance`` + U+200B looks like ``finance/`` but no ``finance/**`` rule matches it,
so its files would fall through to a wider rule without a word."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from acl.model import EVERYONE
from indexer.index import StoreSpec
from indexer.index.embedded.index import EmbeddedIndex
from indexer.ingest.pipeline import Ingestor
from indexer.ingest.safe_scan import name_problem, shown
from service.access.state import AccessState
from service.domain.store import Store
from service.persistence.sql_settings import SqlSettingsRepository
from tests.fakes_service import FakeEmbedder

STORE = "docs"
MANIFEST = """
groups:
  finance: [user:fiona]
documents:
  - match: "finance/**"
    allow: [group:finance]
  - match: "**"
    allow: [group:everyone]
"""
FORMAT = "file name holds an invisible format character (no ACL rule can match it reliably)"


@pytest.fixture
def index() -> Iterator[EmbeddedIndex]:
    index = EmbeddedIndex(None)
    yield index
    index.close()


@pytest.fixture
def repo() -> SqlSettingsRepository:
    r = SqlSettingsRepository.from_url("sqlite://")
    r.create_store(Store(STORE, STORE, "fake", 0.5, 0.1, 0.6, 8))
    return r


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "finance").mkdir(parents=True)
    (root / "finance\u200b").mkdir()
    (root / "public").mkdir()
    (root / "acl.yaml").write_text(MANIFEST)
    (root / "finance" / "budget.md").write_text("# Budget\n\nThe budget is 4 million euros.\n")
    (root / "finance\u200b" / "payroll.md").write_text("# Payroll\n\nSECRET-PAYROLL-7731 is the payroll code.\n")
    (root / "public" / "welcome.md").write_text("# Welcome\n\nThe canteen opens at noon.\n")
    (root / "public" / "report\u202egpj.md").write_text("# Report\n\nSECRET-BIDI-4410 hides behind a bidi override.\n")
    (root / "public" / "notes\u2066x\u2069.md").write_text("# Notes\n\nSECRET-ISOLATE-2290.\n")
    (root / "public" / "soft\ufeff.md").write_text("# Soft\n\nSECRET-BOM-1188.\n")
    return root


def everyone_reads(index: EmbeddedIndex) -> str:
    vector = np.eye(1, FakeEmbedder().dimension, dtype=np.float32)[0]
    hits = index.exact(STORE, vector, 10_000, {"field": "acl_allow", "operator": "in", "value": ["user:bob", EVERYONE]})
    return "\n".join(h.chunk.text for h in hits)


def test_names_with_format_characters_are_refused_by_their_escaped_name(
    folder: Path, repo: SqlSettingsRepository, index: EmbeddedIndex
) -> None:
    embedder = FakeEmbedder()
    index.ensure(StoreSpec(STORE, embedder.dimension))
    ingestor = Ingestor(index=index, catalog=repo, access=AccessState(repo, index), embedder=embedder, store_id=STORE)
    report = ingestor.index_folder(folder)
    assert sorted(report.indexed) == ["finance/budget.md", "public/welcome.md"]
    assert report.refused == {
        "finance\\u200b": FORMAT,
        "public/report\\u202egpj.md": FORMAT,
        "public/notes\\u2066x\\u2069.md": FORMAT,
        "public/soft\\ufeff.md": FORMAT,
    }
    public = everyone_reads(index)
    assert "canteen" in public and "SECRET" not in public and "4 million" not in public
    assert {d.id for d in repo.list_documents(STORE)} == {"finance/budget.md", "public/welcome.md"}


@pytest.mark.parametrize(
    "char",
    [
        "\u200b",
        "\u200c",
        "\u200d",
        "\u200e",
        "\u200f",
        "\u202a",
        "\u202b",
        "\u202c",
        "\u202d",
        "\u202e",
        "\u2066",
        "\u2067",
        "\u2068",
        "\u2069",
        "\u2060",
        "\ufeff",
        "\u00ad",
        "\U000e0041",
    ],
)
def test_every_format_character_is_a_name_problem_and_shown_escaped(char: str) -> None:
    assert name_problem(f"finance{char}") == FORMAT
    assert shown(f"finance{char}") == "finance" + char.encode("unicode_escape").decode("ascii")


def test_ordinary_unicode_names_are_kept() -> None:
    for name in ("café.md", "日本語.md", "résumé – final.md", "emoji 🎉.md"):
        assert name_problem(name) is None and shown(name) == name
