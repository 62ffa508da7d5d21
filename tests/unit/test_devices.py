"""The embedder runs on a GPU when torch sees one and ``embedding.device`` is unset; the setting always wins."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
import torch

from indexer.devices import pick_device
from indexer.embedder import SentenceTransformerEmbedder


@pytest.mark.parametrize(
    ("configured", "gpu", "expected"),
    [(None, True, "cuda"), (None, False, "cpu"), ("", True, "cuda"), ("cpu", True, "cpu"), ("cuda:1", False, "cuda:1")],
)
def test_the_device(monkeypatch: pytest.MonkeyPatch, configured: str | None, gpu: bool, expected: str) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    assert pick_device(configured) == expected


def test_the_embedder_loads_its_model_on_the_gpu_it_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[Any] = []

    class FakeSentenceTransformer:
        def __init__(self, source: str, device: str) -> None:
            loaded.append(device)

    fake = types.ModuleType("sentence_transformers")
    fake.SentenceTransformer = FakeSentenceTransformer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    SentenceTransformerEmbedder()._load()
    SentenceTransformerEmbedder(device="cpu")._load()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    SentenceTransformerEmbedder()._load()
    assert loaded == ["cuda", "cpu", "cpu"]
