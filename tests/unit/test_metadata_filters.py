"""MetadataFilter: validation with clear messages, translation to the index filter language, and the
ingest pipeline filling what the filters read (folder scan: mtime and type; push: metadata and modified)."""

from __future__ import annotations

import fnmatch
import os
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acl.errors import InvalidArgument
from acl.model import Acl
from indexer.index import StoreSpec
from indexer.index.attributes import frozen_metadata, iso, parse_instant
from indexer.index.filters import acl_filter, and_, glob_matches, validate
from indexer.ingest.pipeline import Ingestor
from service.access.state import AccessState
from service.domain.filters import MetadataCondition, MetadataFilter, restrict
from service.domain.store import Store
from service.persistence.sql_settings import SqlSettingsRepository
from tests.fakes import FakeIndex
from tests.fakes_service import FakeEmbedder

STORE = "docs"


def test_an_empty_filter_is_no_filter_and_restrict_keeps_the_access_filter_alone() -> None:
    access = acl_filter(["user:a"])
    assert MetadataFilter().is_empty and MetadataFilter().to_filter() is None
    assert restrict(access, None) == access
    assert restrict(access, MetadataFilter()) == access


def test_every_condition_translates_and_is_anded_after_the_access_filter() -> None:
    filters = MetadataFilter.parse(
        path_prefix="hr/",
        path_glob="hr/*.pdf",
        content_types=["Application/PDF", "text/html", "application/pdf"],
        title_contains="Leave",
        modified_from="2024-01-01",
        modified_to="2024-12-31T23:59:59+01:00",
        indexed_from="2024-06-01T00:00:00Z",
        indexed_to="2024-06-30",
        metadata={"dept": ["hr", "legal"], "year": ["2024"]},
    )
    assert filters.content_types == ("application/pdf", "text/html")  # normalised, deduplicated
    assert filters.modified_to == datetime(2024, 12, 31, 22, 59, 59, tzinfo=UTC)
    translated = filters.to_filter()
    assert translated is not None
    assert validate(translated) == translated
    assert translated["conditions"] == [
        {"field": "document_id", "operator": "prefix", "value": "hr/"},
        {"field": "document_id", "operator": "glob", "value": "hr/*.pdf"},
        {"field": "content_type", "operator": "in", "value": ["application/pdf", "text/html"]},
        {"field": "title", "operator": "contains", "value": "Leave"},
        {"field": "modified", "operator": ">=", "value": "2024-01-01T00:00:00.000Z"},
        {"field": "modified", "operator": "<=", "value": "2024-12-31T22:59:59.000Z"},
        {"field": "indexed_at", "operator": ">=", "value": "2024-06-01T00:00:00.000Z"},
        {"field": "indexed_at", "operator": "<=", "value": "2024-06-30T00:00:00.000Z"},
        {"field": "metadata.dept", "operator": "in", "value": ["hr", "legal"]},
        {"field": "metadata.year", "operator": "in", "value": ["2024"]},
    ]
    access = acl_filter(["group:x"])
    assert restrict(access, filters) == and_(access, translated)
    assert restrict(access, filters)["conditions"][0] == access  # the ACL is always there, first


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"modified_from": "2024-02-01", "modified_to": "2024-01-31"}, "modified date range is empty"),
        ({"indexed_from": "2024-02-01T00:00:00.001Z", "indexed_to": "2024-02-01"}, "indexed date range is empty"),
        ({"modified_from": "yesterday"}, "is not an ISO-8601 date"),
        ({"modified_to": "2024-02-30"}, "is not an ISO-8601 date"),
        ({"indexed_from": "2024-01-01T10:00"}, "no time zone"),
        ({"indexed_to": ""}, "must be an ISO-8601 date"),
        ({"path_prefix": ""}, "path prefix must not be empty"),
        ({"path_glob": ""}, "path glob must not be empty"),
        ({"path_glob": "*" * 257}, "path glob is longer than 256 characters"),
        ({"title_contains": "a\nb"}, "control characters"),
        ({"content_types": ["html"]}, "is not a media type"),
        ({"content_types": ["text/html"] * 65}, "at most 64 content types"),
        ({"metadata": {"Dept": ["hr"]}}, "metadata key 'Dept' is not valid"),
        ({"metadata": {"9lives": ["x"]}}, "is not valid"),
        ({"metadata": {"k" * 64: ["x"]}}, "is not valid"),
        ({"metadata": {"dept": []}}, "give at least one value"),
        ({"metadata": {"dept": ["x" * 257]}}, "longer than 256 characters"),
        ({"metadata": {"dept": [str(i) for i in range(65)]}}, "at most 64 values"),
        ({"metadata": {f"k{i}": ["x"] for i in range(33)}}, "at most 32 metadata conditions"),
        ({"metadata": [("dept", ["hr"]), ("dept", ["it"])]}, "each metadata key may appear once"),
    ],
)
def test_bad_filters_are_invalid_with_a_clear_message(fields: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        MetadataFilter.parse(**fields)  # type: ignore[arg-type]


def test_bounds_equal_are_allowed_and_naive_datetimes_are_refused() -> None:
    same = MetadataFilter.parse(modified_from="2024-01-01", modified_to="2024-01-01T00:00:00Z")
    assert same.modified_from == same.modified_to
    with pytest.raises(InvalidArgument, match="no time zone"):
        MetadataFilter(modified_from=datetime(2024, 1, 1))
    with pytest.raises(InvalidArgument, match="give at least one value"):
        MetadataCondition("dept", ())


def test_from_mapping_refuses_an_unknown_key() -> None:
    with pytest.raises(InvalidArgument, match="unknown filter key 'path'"):
        MetadataFilter.from_mapping({"path": "hr/"})
    with pytest.raises(InvalidArgument, match="wrong type"):
        MetadataFilter.from_mapping({"content_types": 5})
    assert MetadataFilter.from_mapping({"path_prefix": "hr/"}).path_prefix == "hr/"


def test_instants_are_utc_milliseconds_and_read_back_the_same() -> None:
    at = parse_instant("2024-05-01T12:00:00.123999+02:00")
    assert at == datetime(2024, 5, 1, 10, 0, 0, 123000, tzinfo=UTC)
    assert iso(at) == "2024-05-01T10:00:00.123Z" and parse_instant(iso(at)) == at
    assert iso(datetime(5, 1, 1, tzinfo=timezone(timedelta(hours=0)))) == "0005-01-01T00:00:00.000Z"
    with pytest.raises(InvalidArgument, match="out of range"):
        parse_instant("0001-01-01T00:00:00+01:00")


def test_custom_metadata_is_validated_and_immutable() -> None:
    metadata = frozen_metadata({"b": "2", "a": "1"})
    assert list(metadata) == ["a", "b"]
    with pytest.raises(TypeError):
        metadata["c"] = "3"  # type: ignore[index]
    for bad, message in (
        ({"A": "x"}, "is not valid"),
        ({"a": 1}, "must be a string"),
        ({"a": "x\x00"}, "control characters"),
        ({f"k{i}": "v" for i in range(33)}, "at most 32 are allowed"),
    ):
        with pytest.raises(InvalidArgument, match=message):
            frozen_metadata(bad)  # type: ignore[arg-type]


# -- the pipeline fills what filters read ----------------------------------------------------------


@pytest.fixture
def world(tmp_path: Path) -> tuple[FakeIndex, FakeEmbedder, Ingestor]:
    repo = SqlSettingsRepository.from_url("sqlite://")
    repo.create_store(Store(STORE, STORE, "fake", 0.5, 0.1, 0.6, 8))
    index, embedder = FakeIndex(), FakeEmbedder()
    index.ensure(StoreSpec(STORE, embedder.dimension))
    clock = iter(datetime(2024, 6, 1, tzinfo=UTC) + timedelta(days=d) for d in range(100))
    ingestor = Ingestor(
        index=index,
        catalog=repo,
        access=AccessState(repo, index),
        embedder=embedder,
        store_id=STORE,
        clock=lambda: next(clock),
    )
    return index, embedder, ingestor


def _chunks(index: FakeIndex, document_id: str) -> list[object]:
    query = np.eye(1, 64, dtype=np.float32)[0]
    hits = index.exact(STORE, query, 100, {"field": "document_id", "operator": "==", "value": document_id})
    return [h.chunk for h in hits]


def test_a_folder_scan_records_each_files_mtime_and_content_type(
    tmp_path: Path, world: tuple[FakeIndex, FakeEmbedder, Ingestor]
) -> None:
    index, embedder, ingestor = world
    root = tmp_path / "corpus"
    (root / "hr").mkdir(parents=True)
    (root / "acl.yaml").write_text('documents:\n  - match: "**"\n    allow: [group:everyone]\n')
    (root / "hr" / "leave.md").write_text("# Leave\n\nTwenty-five days.\n")
    (root / "page.html").write_text("<html><title>Page</title><body><p>Security first.</p></body></html>")
    os.utime(root / "hr" / "leave.md", ns=(0, 1_714_521_600_123_456_789))  # 2024-05-01T00:00:00.123456789Z
    ingestor.index_folder(root)
    (leave,) = _chunks(index, "hr/leave.md")
    assert leave.content_type == "text/markdown"  # type: ignore[attr-defined]
    assert leave.modified == datetime(2024, 5, 1, 0, 0, 0, 123000, tzinfo=UTC)  # type: ignore[attr-defined]
    assert leave.indexed_at is not None  # type: ignore[attr-defined]
    (page,) = _chunks(index, "page.html")
    assert page.content_type == "text/html"  # type: ignore[attr-defined]
    before = embedder.embedded
    assert ingestor.index_folder(root).unchanged == ["hr/leave.md", "page.html"]
    assert embedder.embedded == before
    os.utime(root / "hr" / "leave.md", ns=(0, 1_717_200_000_000_000_000))  # only touched: nothing re-embedded
    assert ingestor.index_folder(root).unchanged == ["hr/leave.md", "page.html"]
    assert embedder.embedded == before
    (root / "hr" / "leave.md").write_text("# Leave\n\nThirty days.\n")  # changed: its new mtime is recorded
    os.utime(root / "hr" / "leave.md", ns=(0, 1_717_200_000_000_000_000))
    again = ingestor.index_folder(root)
    assert again.indexed == ["hr/leave.md"]
    (leave,) = _chunks(index, "hr/leave.md")
    assert leave.modified == datetime(2024, 6, 1, tzinfo=UTC)  # type: ignore[attr-defined]


def test_a_push_with_unchanged_text_but_new_metadata_updates_the_index(
    world: tuple[FakeIndex, FakeEmbedder, Ingestor],
) -> None:
    index, _, ingestor = world
    acl = Acl.of(["group:everyone"])
    modified = datetime(2024, 3, 1, 12, tzinfo=UTC)
    first = ingestor.upsert_bytes(
        "a", b"Vacation is 25 days.", "text/plain; charset=utf-8", acl=acl, metadata={"dept": "hr"}, modified=modified
    )
    assert first.indexed == ["a"]
    (chunk,) = _chunks(index, "a")
    assert (dict(chunk.metadata), chunk.modified, chunk.content_type) == ({"dept": "hr"}, modified, "text/plain")  # type: ignore[attr-defined]
    written = chunk.indexed_at  # type: ignore[attr-defined]
    same = ingestor.upsert_bytes(
        "a", b"Vacation is 25 days.", "text/plain", acl=acl, metadata={"dept": "hr"}, modified=modified
    )
    assert same.unchanged == ["a"]
    changed = ingestor.upsert_bytes("a", b"Vacation is 25 days.", "text/plain", acl=acl, metadata={"dept": "legal"})
    assert changed.indexed == ["a"]
    (chunk,) = _chunks(index, "a")
    assert (dict(chunk.metadata), chunk.modified) == ({"dept": "legal"}, None)  # type: ignore[attr-defined]
    assert chunk.indexed_at > written  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("metadata", "modified"),
    [({"Bad Key": "x"}, None), ({"dept": "x" * 257}, None), ({}, datetime(2024, 1, 1))],
)
def test_a_push_with_bad_metadata_is_invalid_and_writes_nothing(
    world: tuple[FakeIndex, FakeEmbedder, Ingestor], metadata: dict[str, str], modified: datetime | None
) -> None:
    index, _, ingestor = world
    with pytest.raises(InvalidArgument):
        ingestor.upsert_bytes(
            "a", b"text", "text/plain", acl=Acl.of(["group:everyone"]), metadata=metadata, modified=modified
        )
    assert index.count(STORE) == 0


@settings(max_examples=400, deadline=None)
@given(
    pattern=st.text(alphabet="ab/.*?", max_size=8),
    text=st.text(alphabet="ab/.", max_size=10),
)
def test_glob_matches_as_fnmatch_does_for_star_and_question_mark(pattern: str, text: str) -> None:
    assert glob_matches(pattern, text) == fnmatch.fnmatchcase(text, pattern)


def test_a_glob_that_would_backtrack_is_matched_piece_by_piece() -> None:
    # A regular expression for this pattern backtracks exponentially on such ids (a timing oracle on the ids
    # of documents the caller may not read); matched piece by piece it is at most len(id) × len(pattern) steps.
    tail = "*" * 12 + "!"
    assert not glob_matches("hr/" + tail, "hr/" + "a" * 300)
    assert glob_matches("hr/" + tail, "hr/" + "a" * 300 + "!")
    assert glob_matches("*a*b*", "xxaxxbxx") and not glob_matches("*a*b*", "xxbxxaxx")
