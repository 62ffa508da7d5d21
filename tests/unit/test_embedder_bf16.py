"""``embedding.quantize: bf16`` encodes through OpenVINO where the CPU and packages allow, else fp32 and says why."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from indexer import embedder_openvino
from indexer.embedder_openvino import bf16_unavailable, cpu_flags
from indexer.onnx_model import shared_cache_dir
from tests.env import clear_docqa_env

TEXTS = [
    "a",
    "How many vacation days do I get?",
    "Which setting decides which network interfaces the server accepts connections on?",
    "SELECT count(*) FROM chunks WHERE store_id = 'acme';",
    "Ünïcödé façade, naïve café, Straße und Grüße.",
    "The quick brown fox jumps over the lazy dog. " * 30,  # past the model's 256 tokens: truncated
    "git rebase --onto moves a range of commits onto another base.",
    "The autovacuum daemon reclaims the storage of dead tuples.",
]


def test_the_cpu_flags_are_read_from_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16\n\nprocessor\t: 1\nflags : fpu\n")
    assert cpu_flags(cpuinfo) == {"fpu", "avx2", "avx512f", "avx512_bf16"}
    assert cpu_flags(tmp_path / "missing") == frozenset()


def test_bf16_needs_bf16_instructions_and_openvino() -> None:
    assert bf16_unavailable(frozenset({"avx512_bf16"}), installed=True) is None
    assert bf16_unavailable(frozenset({"amx_bf16", "amx_tile"}), installed=True) is None
    no_bf16 = bf16_unavailable(frozenset({"avx2", "avx512f", "avx512_vnni"}), installed=True)
    assert no_bf16 is not None and "bf16 instructions" in no_bf16
    no_openvino = bf16_unavailable(frozenset({"avx512_bf16"}), installed=False)
    assert no_openvino is not None and "OpenVINO is not installed" in no_openvino


def test_a_missing_openvino_is_seen_without_importing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openvino", None)
    assert not embedder_openvino.openvino_installed()


def test_the_config_accepts_bf16(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from service.config import load_settings

    clear_docqa_env(monkeypatch, tmp_path)
    monkeypatch.setenv("DOCQA_EMBEDDING__QUANTIZE", "bf16")
    assert load_settings(None, data_dir=tmp_path).embedding.quantize == "bf16"


@pytest.mark.parametrize(("cause", "shown"), [(None, "bf16 through OpenVINO"), ("no bf16", "fp32 ONNX Runtime")])
def test_doctor_says_which_precision_encodes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], cause: str | None, shown: str
) -> None:
    from service.api.cli.doctor import _doctor_embedding

    monkeypatch.setattr(embedder_openvino, "bf16_unavailable", lambda: cause)
    lines: list[tuple[str, bool, str]] = []
    _doctor_embedding(SimpleNamespace(embedding=SimpleNamespace(quantize="bf16")), lambda *a: lines.append(a))
    assert lines and lines[0][0] == "embedding precision" and lines[0][1] and shown in lines[0][2]
    lines.clear()
    _doctor_embedding(SimpleNamespace(embedding=SimpleNamespace(quantize="none")), lambda *a: lines.append(a))
    assert not lines


@pytest.fixture(scope="module")
def caches(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return [tmp_path_factory.mktemp("data"), shared_cache_dir() or tmp_path_factory.mktemp("model-cache")]


@pytest.fixture(scope="module")
def fp32(caches: list[Path]) -> np.ndarray:
    from indexer.embedder_onnx import OnnxEmbedder

    return OnnxEmbedder(caches=caches, batch_size=4).embed_documents(TEXTS)


@pytest.mark.slow  # exports the model once per machine (torch) where no export is cached
@pytest.mark.parametrize(
    "unavailable",
    [
        pytest.param(lambda mp: mp.setattr(embedder_openvino, "cpu_flags", lambda: frozenset({"avx2"})), id="no-bf16"),
        pytest.param(lambda mp: mp.setitem(sys.modules, "openvino", None), id="no-openvino"),
    ],
)
def test_without_bf16_or_openvino_the_fp32_export_encodes_with_one_warning(
    caches: list[Path],
    fp32: np.ndarray,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    unavailable: object,
) -> None:
    from indexer.embedder_onnx import OnnxEmbedder

    unavailable(monkeypatch)  # type: ignore[operator]
    embedder = OnnxEmbedder(caches=caches, batch_size=4, quantize="bf16")
    with caplog.at_level(logging.WARNING, logger="indexer.embedder_onnx"):
        got = embedder.embed_documents(TEXTS)
        embedder.embed_query("travel budget")
    warnings = [r.getMessage() for r in caplog.records if r.name == "indexer.embedder_onnx"]
    assert len(warnings) == 1 and "bf16 unavailable" in warnings[0] and "fp32" in warnings[0]
    assert embedder.backend == "onnx"
    assert np.allclose(got, fp32, atol=1e-5)


@pytest.mark.slow
def test_bf16_vectors_stay_close_to_fp32_and_rank_alike(caches: list[Path], fp32: np.ndarray) -> None:
    if bf16_unavailable() is not None:
        pytest.skip(f"bf16 unavailable here: {bf16_unavailable()}")
    from indexer.embedder_onnx import OnnxEmbedder

    embedder = OnnxEmbedder(caches=caches, batch_size=4, quantize="bf16")
    got = embedder.embed_documents(TEXTS)
    assert embedder.backend == "openvino-bf16"
    assert got.dtype == np.float32 and got.shape == fp32.shape
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert float((got * fp32).sum(axis=1).min()) >= 0.99
    # Each text's nearest other text is the same in both precisions.
    nearest = [(vectors @ vectors.T - 2 * np.eye(len(TEXTS))).argmax(axis=1) for vectors in (got, fp32)]
    assert (nearest[0] == nearest[1]).all()
