"""``docqa adapt`` end to end on a tiny store: the packaged MiniLM's weights and tokenizer, a one-layer model
trained in seconds, exported to ONNX, installed, and used by ``rerank.kind: adapted``.

What it learns from is what ``group:everyone`` may read: a document only HR may read changes nothing in the
model (the same bytes whatever it says). Bad input changes nothing: an unknown or empty store, too little
text, a second run on a store one is running on, a corrupt or foreign model (the offline reranker then
ranks, with a warning).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from acl.errors import InvalidArgument, NotFound, ResourceExhausted
from acl.model import Acl
from indexer.index import ChunkRecord, SearchHit
from service.adaptation.job import adapt
from service.adaptation.lock import running, store_lock
from service.adaptation.options import AdaptOptions
from service.bootstrap import App, build_app
from service.config import Settings
from service.domain.queries import Caller, VectorQuery
from service.ranking.adapted import NO_MODEL, AdaptedReranker
from service.ranking.adapted_model import MANIFEST_FILE, MODEL_FILE, model_folder, sha256
from service.ranking.offline import OfflineReranker
from tests.fakes_service import FakeEmbedder

STORE = "handbook"
TOPICS = {
    "vacation": ("vacation", "leave", "holiday", "carry-over"),
    "expenses": ("expense", "receipt", "reimbursement", "mileage"),
    "security": ("password", "badge", "laptop", "encryption"),
    "onboarding": ("mentor", "orientation", "equipment", "induction"),
    "travel": ("flight", "hotel", "booking", "per-diem"),
    "payroll": ("salary", "payslip", "bonus", "deduction"),
    "wellbeing": ("gym", "counselling", "ergonomics", "sick-day"),
}
SECTIONS = ("Eligibility rules", "Request procedure", "Approval deadlines", "Exceptions and appeals")
#: Options that train a one-layer model on a few dozen pairs in seconds.
TINY = AdaptOptions(
    layers=1, max_tokens=48, max_queries=24, negatives=3, groups=4, candidates=8, depth=4, checkpoint_every=2
)


def _document(topic: str, words: tuple[str, ...], secret: str = "") -> bytes:
    parts = [f"# {topic.title()} policy\n"]
    for i, section in enumerate(SECTIONS):
        a, b = words[i % 4], words[(i + 1) % 4]
        parts.append(
            f"## {topic.title()} {section}\n\n"
            f"Every employee who asks about {a} must read the {b} section of the {topic} handbook first. "
            f"The {topic} team answers questions about {a} and {b} within three working days of the request.\n"
        )
    if secret:
        parts.append(f"## Confidential notes\n\nThe board decided {secret} for the coming financial year in private.\n")
    return "\n".join(parts).encode()


def _app(data_dir: Path, secret: str = "restructuring plans", topics: int = len(TOPICS)) -> App:
    app = build_app(Settings(data_dir=data_dir), embedder_factory=lambda _: FakeEmbedder())
    ingest = app.ingestor(STORE)
    for topic, words in list(TOPICS.items())[:topics]:
        ingest.upsert_bytes(f"{topic}.md", _document(topic, words), "text/markdown", acl=Acl.of(["group:everyone"]))
    ingest.upsert_bytes(
        "hr-only.md", _document("reorganisation", TOPICS["payroll"], secret), "text/markdown", acl=Acl.of(["group:hr"])
    )
    # Everyone may read it but bob: not what every caller may read, so not learned from either. Its secret is
    # long enough to be cut by the tokenizer as a query (a pseudo-query longer than max_tokens once crashed).
    ingest.upsert_bytes(
        "not-bob.md",
        _document("succession", TOPICS["security"], f"{secret} " + "and the timeline of the handover " * 8),
        "text/markdown",
        acl=Acl.of(["group:everyone"], deny=["user:bob"]),
    )
    return app


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, Any]]:
    app = _app(tmp_path_factory.mktemp("adapt"))
    phases: list[tuple[str, int, int]] = []
    result = adapt(app, STORE, replace(TINY, force=True), on_progress=lambda *p: phases.append(p))
    result.phases = phases  # type: ignore[attr-defined]
    yield app, result
    app.close()


def test_adapt_trains_exports_and_installs_a_model_for_the_store(trained: tuple[App, Any]) -> None:
    app, result = trained
    assert result.installed and result.training_queries >= 24 and result.held_out >= 1
    assert result.scope == "readable by group:everyone" and result.documents == len(TOPICS)
    assert {p[0] for p in result.phases} >= {"reading", "mining", "training", "exporting", "evaluating", "installing"}
    folder = model_folder(app.settings.data_dir, STORE)
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    assert (
        manifest["store_id"] == STORE
        and manifest["layers"] == 1
        and manifest["model_sha256"] == sha256(folder / MODEL_FILE)
    )
    assert not (folder.parent / "work").exists(), "the work folder goes when a run ends"


def _hits(app: App) -> list[SearchHit]:
    chunks = [
        ChunkRecord(
            *(f"{t}.md#0", f"{t}.md", 0, f"The {t} team answers questions about {w[0]}.", f"{t} policy", "", (), 0, 1),
            Acl.of(["group:everyone"]),
            vector=FakeEmbedder().embed_query(t),
        )
        for t, w in TOPICS.items()
    ]
    return [SearchHit(c, 0.5 - i / 100) for i, c in enumerate(chunks)]


def test_rerank_kind_adapted_uses_the_store_model_and_every_candidate_comes_back_once(trained: tuple[App, Any]) -> None:
    app, _ = trained
    reranker = AdaptedReranker(OfflineReranker(app.embedder, model="fake"), app.settings.data_dir)
    hits = _hits(app)
    store_model = reranker.for_store(STORE)
    assert store_model.name == f"adapted:{STORE}" and store_model.notice is None
    order = store_model.rerank("Who answers questions about mileage?", FakeEmbedder().embed_query("mileage"), hits)
    assert sorted(r.hit.chunk.chunk_id for r in order) == sorted(h.chunk.chunk_id for h in hits)
    other = reranker.for_store("another")  # a store never adapted: the offline reranker, with the warning
    assert other.notice == NO_MODEL and other.name == "offline"


def test_a_query_through_the_engine_with_rerank_adapted(trained: tuple[App, Any], tmp_path: Path) -> None:
    app, _ = trained
    settings = app.settings.model_copy(update={"rerank": app.settings.rerank.model_copy(update={"kind": "adapted"})})
    adapted = build_app(settings, embedder_factory=lambda _: FakeEmbedder())
    try:
        query = VectorQuery(STORE, "How are expense receipts reimbursed?", level=0.0)
        answer = adapted.one_shot_engine.ask(Caller("alice"), query)
        assert answer.chunks and not any("adapted reranker" in w for w in answer.warnings)
        assert all(c.document_id != "hr-only.md" for c in answer.chunks)
        for name, text in (("a.md", b"Mileage is paid per kilometre."), ("b.md", b"Mileage claims go to finance.")):
            adapted.ingestor("other").upsert_bytes(name, text, "text/markdown", acl=Acl.of(["group:everyone"]))
        other = adapted.one_shot_engine.ask(Caller("alice"), VectorQuery("other", "mileage?", level=0.0))
        assert NO_MODEL in " ".join(other.warnings)
    finally:
        adapted.close()


@pytest.mark.parametrize("damage", ["corrupt", "foreign", "truncated manifest"])
def test_a_corrupt_or_foreign_model_is_refused_and_the_offline_reranker_ranks(
    trained: tuple[App, Any], tmp_path: Path, damage: str
) -> None:
    app, _ = trained
    copy = tmp_path / "data"
    source = model_folder(app.settings.data_dir, STORE)
    target = model_folder(copy, STORE)
    shutil.copytree(source, target)
    if damage == "corrupt":
        with (target / MODEL_FILE).open("r+b") as f:
            f.seek(1000)
            f.write(b"\x00" * 64)
    elif damage == "foreign":
        manifest = json.loads((target / MANIFEST_FILE).read_text())
        manifest["store_id"] = "elsewhere"
        (target / MANIFEST_FILE).write_text(json.dumps(manifest))
    else:
        (target / MANIFEST_FILE).write_text('{"format": 1, "store_id"')
    reranker = AdaptedReranker(OfflineReranker(app.embedder, model="fake"), copy)
    assert reranker.model(STORE) is None
    fallback = reranker.for_store(STORE)
    assert fallback.notice == NO_MODEL
    hits = _hits(app)
    assert len(fallback.rerank("mileage", FakeEmbedder().embed_query("mileage"), hits)) == len(hits)


def test_what_only_hr_may_read_changes_nothing_in_the_model(tmp_path: Path) -> None:
    """The leakage check of the model channel: the same model bytes whatever the HR-only document and the one
    denied to bob say."""
    digests = []
    for secret in ("a merger with Globex", "closing the Springfield plant"):
        app = _app(tmp_path / secret.replace(" ", "-"), secret=secret)
        try:
            result = adapt(app, STORE, replace(TINY, force=True))
            assert result.installed
            digests.append(sha256(model_folder(app.settings.data_dir, STORE) / MODEL_FILE))
        finally:
            app.close()
    assert digests[0] == digests[1]


def test_bad_input_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    app = _app(tmp_path / "few", topics=2)
    try:
        with pytest.raises(NotFound, match="store 'nowhere' not found"):
            adapt(app, "nowhere", TINY)
        with pytest.raises(InvalidArgument, match="at least 3 documents"):
            adapt(app, STORE, TINY)
        with pytest.raises(InvalidArgument, match="no documents readable by group:nobody"):
            adapt(app, STORE, replace(TINY, principals=frozenset({"group:nobody"})))
        with pytest.raises(InvalidArgument, match="layers must be between"):
            adapt(app, STORE, replace(TINY, layers=0))
        with store_lock(app.settings.data_dir, STORE):
            assert running(app.settings.data_dir, STORE)
            with pytest.raises(ResourceExhausted, match="another docqa adapt is running on store 'handbook'"):
                adapt(app, STORE, TINY)
        assert not running(app.settings.data_dir, STORE)
        assert not model_folder(app.settings.data_dir, STORE).exists()
    finally:
        app.close()


def test_a_killed_run_resumes_from_its_last_checkpoint(tmp_path: Path) -> None:
    app = _app(tmp_path / "resume")
    options = replace(TINY, force=True)

    class Killed(Exception):
        pass

    def die_at_step_5(phase: str, done: int, total: int) -> None:
        if phase == "training" and done == 5:
            raise Killed

    try:
        with pytest.raises(Killed):
            adapt(app, STORE, options, on_progress=die_at_step_5)
        steps: list[int] = []
        result = adapt(app, STORE, options, on_progress=lambda p, d, t: steps.append(d) if p == "training" else None)
        assert result.installed
        assert steps[0] == 5, f"resumed at the checkpoint after step 4, then step 5: {steps}"
    finally:
        app.close()


def test_the_cli_says_what_is_wrong_without_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from service.api.cli.main import main

    app = _app(tmp_path / "cli", topics=1)
    app.close()
    for argv, code, words in (
        (["adapt", "nowhere"], 3, "store 'nowhere' not found"),
        (["adapt", STORE], 2, "at least 3 documents"),
        (["adapt", STORE, "--questions", "q.yaml"], 2, "--questions needs --as"),
        (["adapt", STORE, "--all-content", "--principal", "group:hr"], 2, "exclude each other"),
        (["adapt", STORE, "--layers", "0"], 2, "layers must be between"),
    ):
        assert main(["--data-dir", str(tmp_path / "cli"), *argv]) == code
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err
