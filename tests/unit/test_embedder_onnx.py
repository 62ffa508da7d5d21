"""The ONNX Runtime embedder gives the torch embedder's vectors, caches its export safely, and falls back to torch."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from indexer.embedder import SentenceTransformerEmbedder
from indexer.embedder_onnx import OnnxEmbedder
from indexer.onnx_model import Exporter, OnnxExportError, cached_export, shared_cache_dir, valid_export
from tests.env import clear_docqa_env

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # imports torch, and exports the model once per machine

TEXTS = (
    [
        "",
        "a",
        "How many vacation days do I get?",
        "What is the travel budget assumption for 2027?",
        "   leading and trailing whitespace   ",
        "UPPER CASE SHOUTING ABOUT QUARTERLY RESULTS",
        "Ünïcödé façade, naïve café, Straße und Grüße.",
        "日本語のテキストも埋め込めるはずです。",
        "Le conseil d'administration a approuvé le budget.",
        "SELECT count(*) FROM chunks WHERE store_id = 'acme';",
        "def embed(texts: list[str]) -> np.ndarray: return model.encode(texts)",
        "https://example.com/path?query=1&other=two#anchor",
        "1234567890 3.14159 2.71828 -42 1e-9",
        "🙂 emoji 🚀 and symbols ™ © ®",
        "\ttabs\tand\nnewlines\n\nbetween words",
        "The quick brown fox jumps over the lazy dog. " * 30,  # past the model's 256 tokens: truncated
        "word " * 400,
    ]
    + [
        f"Section {i}: the {topic} policy says employees must {verb} before {when}."
        for i, (topic, verb, when) in enumerate(
            (t, v, w)
            for t in ("travel", "security", "vacation", "expense", "hiring", "privacy")
            for v in ("file a request", "ask their manager")
            for w in ("the end of the quarter", "any trip abroad", "Friday")
        )
    ]
)[:50]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The machine's shared model cache (exported once per machine), or a temporary one when it is turned off."""
    return shared_cache_dir() or tmp_path_factory.mktemp("model-cache")


@pytest.fixture(scope="module")
def onnx(shared: Path, tmp_path_factory: pytest.TempPathFactory) -> OnnxEmbedder:
    return OnnxEmbedder(caches=[tmp_path_factory.mktemp("data"), shared], batch_size=8)


@pytest.fixture(scope="module")
def torch_embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


def test_fifty_texts_have_the_torch_vectors(onnx: OnnxEmbedder, torch_embedder: SentenceTransformerEmbedder) -> None:
    assert len(TEXTS) == 50
    got = onnx.embed_documents(TEXTS)
    want = torch_embedder.embed_documents(TEXTS)
    assert onnx.backend == "onnx"
    assert got.shape == want.shape == (50, torch_embedder.dimension)
    assert got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cosines = (got * want).sum(axis=1)
    assert cosines.min() >= 0.999, [(TEXTS[i][:40], float(cosines[i])) for i in np.argsort(cosines)[:3]]
    assert onnx.max_tokens == torch_embedder.max_tokens and onnx.dimension == torch_embedder.dimension


def test_buckets_give_the_vectors_of_one_text_at_a_time(onnx: OnnxEmbedder) -> None:
    together = onnx.embed_documents(TEXTS)
    alone = np.stack([onnx.embed_query(text) for text in TEXTS])
    assert np.allclose(together, alone, atol=1e-5)


def test_no_text_no_vector(onnx: OnnxEmbedder) -> None:
    assert onnx.embed_documents([]).shape == (0, onnx.dimension)


def test_token_counts_match_the_torch_adapter(onnx: OnnxEmbedder, torch_embedder: SentenceTransformerEmbedder) -> None:
    for text in TEXTS[:20]:
        assert onnx.tokenizer.token_spans(text) == torch_embedder.tokenizer.token_spans(text)


def _copying(source: Path, calls: list[int]) -> Exporter:
    def export(model_dir: Path, target: Path) -> None:
        calls.append(1)
        time.sleep(0.2)  # long enough for a second exporter to arrive while the first works
        shutil.copyfile(source, target)

    return export


def test_a_corrupt_cached_model_is_exported_again_never_used(onnx: OnnxEmbedder, tmp_path: Path) -> None:
    good = valid_export(next((onnx._caches[1] / "models").glob("all-MiniLM-L6-v2-*")))  # the export the module made
    assert good is not None
    calls: list[int] = []
    first = OnnxEmbedder(caches=[tmp_path], exporter=_copying(good, calls))
    want = first.embed_query("How many vacation days do I get?")
    model = next((tmp_path / "models").glob("*/model.onnx"))
    data = bytearray(model.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)  # flipped weights that would still load
    model.write_bytes(bytes(data))
    assert valid_export(model.parent) is None
    second = OnnxEmbedder(caches=[tmp_path], exporter=_copying(good, calls))
    assert np.allclose(second.embed_query("How many vacation days do I get?"), want, atol=1e-6)
    assert len(calls) == 2 and valid_export(model.parent) == model


def test_two_exporters_at_once_export_once(onnx: OnnxEmbedder, tmp_path: Path) -> None:
    good = valid_export(next((onnx._caches[1] / "models").glob("all-MiniLM-L6-v2-*")))
    assert good is not None
    calls: list[int] = []
    source = onnx._source
    assert isinstance(source, Path)
    results: list[Path] = []
    workers = [
        threading.Thread(target=lambda: results.append(cached_export("m", source, [tmp_path], _copying(good, calls))))
        for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(calls) == 1 and len(set(results)) == 1
    assert valid_export(results[0].parent) == results[0]
    assert json.loads((results[0].parent / "model.json").read_text())["size"] == good.stat().st_size
    assert not [p for p in results[0].parent.iterdir() if p.name.endswith(".tmp")]


def test_an_export_failure_falls_back_to_torch_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, torch_embedder: SentenceTransformerEmbedder
) -> None:
    def broken(model_dir: Path, target: Path) -> None:
        raise RuntimeError("the exporter is broken today")

    embedder = OnnxEmbedder(caches=[tmp_path], exporter=broken)
    with caplog.at_level(logging.WARNING, logger="indexer.embedder_onnx"):
        first = embedder.embed_documents(["How many vacation days do I get?", "travel budget"])
        second = embedder.embed_query("travel budget")
    warnings = [r.getMessage() for r in caplog.records if r.name == "indexer.embedder_onnx"]
    assert len(warnings) == 1 and "the exporter is broken today" in warnings[0] and "torch" in warnings[0]
    assert embedder.backend == "torch"
    assert np.allclose(first, torch_embedder.embed_documents(["How many vacation days do I get?", "travel budget"]))
    assert np.allclose(second, first[1], atol=1e-6)  # alone vs padded in a batch: the last bits differ
    assert not list((tmp_path / "models").glob("*/model.onnx"))


def test_no_cache_folder_is_an_export_error(onnx: OnnxEmbedder) -> None:
    source = onnx._source
    assert isinstance(source, Path)
    with pytest.raises(OnnxExportError):
        cached_export("m", source, [], lambda model_dir, target: None)


def test_a_cold_process_embeds_without_importing_torch(onnx: OnnxEmbedder, shared: Path, tmp_path: Path) -> None:
    onnx.embed_query("warm the cache")
    code = (
        "import sys; from pathlib import Path; from indexer.embedder_onnx import OnnxEmbedder; "
        f"e = OnnxEmbedder(caches=[Path({str(tmp_path)!r}), Path({str(shared)!r})]); "
        "v = e.embed_query('How many vacation days do I get?'); "
        "print(e.backend, v.shape[0], 'torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout.split() == ["onnx", str(onnx.dimension), "False"], done.stderr[-2000:]


@pytest.mark.parametrize(
    ("backend", "device", "kind"),
    [
        ("onnx", None, OnnxEmbedder),
        ("torch", None, SentenceTransformerEmbedder),
        ("onnx", "cuda", SentenceTransformerEmbedder),
    ],
)
def test_the_configured_backend_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str, device: str | None, kind: type
) -> None:
    from service.bootstrap import build_app
    from service.config import load_settings

    clear_docqa_env(monkeypatch, tmp_path)
    monkeypatch.setenv("DOCQA_EMBEDDING__BACKEND", backend)
    if device is not None:
        monkeypatch.setenv("DOCQA_EMBEDDING__DEVICE", device)  # ONNX runs on the CPU; a device means torch
    app = build_app(load_settings(None, data_dir=tmp_path))
    assert type(app.embedder()) is kind
    app.close()


@pytest.fixture(scope="module")
def int8(shared: Path, tmp_path_factory: pytest.TempPathFactory) -> OnnxEmbedder:
    return OnnxEmbedder(caches=[tmp_path_factory.mktemp("data-int8"), shared], batch_size=8, quantize="int8")


def test_int8_vectors_stay_close_to_fp32_and_rank_alike(int8: OnnxEmbedder, onnx: OnnxEmbedder) -> None:
    got, want = int8.embed_documents(TEXTS), onnx.embed_documents(TEXTS)
    assert int8.backend == "onnx-int8"
    assert got.shape == want.shape and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cosines = (got * want).sum(axis=1)
    assert cosines.min() >= 0.97 and cosines.mean() >= 0.99, float(cosines.min())
    assert not np.allclose(got, want, atol=1e-4)  # really another model, not the fp32 export again
    # The nearest text of every text is the same under both models.
    assert ((got @ got.T).argsort(axis=1)[:, -2] == (want @ want.T).argsort(axis=1)[:, -2]).mean() >= 0.9


def test_the_int8_model_is_made_once_and_cached_beside_the_fp32_export(int8: OnnxEmbedder, tmp_path: Path) -> None:
    int8.embed_query("warm the cache")
    folders = {p.parent.name for c in int8._caches for p in (c / "models").glob("*/model.onnx")}
    assert any(name.startswith("all-MiniLM-L6-v2-int8-") for name in folders), folders
    calls: list[int] = []

    def exporter(model_dir: Path, target: Path) -> None:
        calls.append(1)
        raise AssertionError("exported again")

    again = OnnxEmbedder(caches=[tmp_path, int8._caches[-1]], exporter=exporter, quantize="int8")
    assert np.allclose(again.embed_query("travel budget"), int8.embed_query("travel budget"), atol=1e-6)
    assert again.backend == "onnx-int8" and not calls


def test_a_quantisation_failing_its_check_keeps_fp32_with_one_warning(
    onnx: OnnxEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import indexer.onnx_quantize

    monkeypatch.setattr(indexer.onnx_quantize, "MIN_INT8_COSINE", 1.01)  # no quantised model can pass
    onnx.embed_query("warm the cache")
    fp32 = next(p.parent for c in onnx._caches for p in (c / "models").glob("*/model.onnx") if "int8" not in str(p))
    shutil.copytree(fp32, tmp_path / "shared" / "models" / fp32.name)  # the fp32 export only, no int8 one
    embedder = OnnxEmbedder(caches=[tmp_path / "data", tmp_path / "shared"], quantize="int8")
    with caplog.at_level(logging.WARNING):
        vector = embedder.embed_query("travel budget")
        embedder.embed_query("vacation")
    warnings = [r.getMessage() for r in caplog.records if r.name == "indexer.embedder_onnx"]
    assert len(warnings) == 1 and "int8" in warnings[0] and "cosine" in warnings[0], warnings
    assert not [r for r in caplog.records if "pre-processing" in r.getMessage()]
    assert embedder.backend == "onnx"
    assert np.allclose(vector, onnx.embed_query("travel budget"), atol=1e-5)
    assert not list(tmp_path.glob("*/models/*int8*/model.onnx"))


def test_int8_is_refused_without_the_onnx_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from acl.errors import ConfigurationError
    from service.config import load_settings

    clear_docqa_env(monkeypatch, tmp_path)
    monkeypatch.setenv("DOCQA_EMBEDDING__QUANTIZE", "int8")
    monkeypatch.setenv("DOCQA_EMBEDDING__BACKEND", "torch")
    with pytest.raises(ConfigurationError, match=r"quantize int8 needs embedding\.backend onnx"):
        load_settings(None, data_dir=tmp_path)


def test_a_server_question_embedder_does_not_spin_while_idle(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from indexer.query_batcher import BatchingEmbedder
    from service.bootstrap import build_app
    from service.config import load_settings

    clear_docqa_env(monkeypatch, tmp_path)
    monkeypatch.setenv("DOCQA_MODEL_CACHE", str(shared))
    indexing = build_app(load_settings(None, data_dir=tmp_path))
    serving = build_app(load_settings(None, data_dir=tmp_path))
    serving.batch_questions()  # as docqa serve does
    try:
        for app, spins in ((indexing, "1"), (serving, "0")):
            embedder = app.embedder()
            inner = embedder.inner if isinstance(embedder, BatchingEmbedder) else embedder
            assert isinstance(inner, OnnxEmbedder)
            assert embedder.embed_query("who approves travel?").shape == (inner.dimension,)
            options = inner._session.get_session_options()
            try:
                set_to = options.get_session_config_entry("session.intra_op.allow_spinning")
            except RuntimeError:  # not set: ONNX Runtime's default, spinning
                set_to = "1"
            assert set_to == spins
    finally:
        indexing.close()
        serving.close()
