"""The local cross-encoder reranker, on a tiny random BERT cross-encoder built in the test (nothing downloaded)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from acl.errors import ConfigurationError
from acl.model import Acl
from indexer.index import ChunkRecord, SearchHit
from service.config import RerankConfig, Settings
from service.ranking.build import build_reranker, check

pytestmark = pytest.mark.slow  # imports torch and transformers

ACL = Acl.of(["group:everyone"])
WORDS = "how many unused vacation days can be carried over the cafeteria opens at noon requests portal up to five"
QUESTION = "how many unused vacation days can be carried over"


def tiny_cross_encoder(folder: Path, labels: int = 1) -> Path:
    """A one-layer BERT with a one-score head and a word-level vocabulary, saved as a model folder."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS.split(), "›"]) + "\n")
    BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(str(folder))
    torch.manual_seed(7)
    config = BertConfig(
        vocab_size=len(vocab.read_text().split()),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=labels,
    )
    BertForSequenceClassification(config).save_pretrained(str(folder))
    return folder


def hit(number: int, text: str) -> SearchHit:
    chunk = ChunkRecord(f"d{number}#0", f"d{number}", 0, text, "", "file:///d", (), 0, len(text), ACL)
    return SearchHit(chunk, 0.5 - number / 100)


HITS = [
    hit(1, "the cafeteria opens at noon"),
    hit(2, "up to five unused vacation days can be carried over"),
    hit(3, "requests go to the portal"),
    hit(4, "five days"),
]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_cross_encoder(tmp_path_factory.mktemp("cross-encoder"))


def test_loads_from_the_configured_folder_and_ranks_by_the_models_scores(model: Path) -> None:
    from sentence_transformers import CrossEncoder

    reranker = build_reranker(
        Settings(rerank=RerankConfig(kind="cross_encoder", model_path=model)), lambda _: pytest.fail("no embedder")
    )
    assert reranker is not None and reranker.name == f"cross_encoder:{model.name}"
    result = reranker.rerank(QUESTION, np.ones(4, dtype=np.float32), HITS)
    assert sorted(r.hit.chunk.chunk_id for r in result) == sorted(h.chunk.chunk_id for h in HITS)
    expected = CrossEncoder(str(model), device="cpu").predict([(QUESTION, h.chunk.text) for h in HITS])
    assert [r.hit.chunk.chunk_id for r in result] == [HITS[i].chunk.chunk_id for i in np.argsort(-expected)]
    assert [r.score for r in result] == pytest.approx(sorted(expected.tolist(), reverse=True), abs=1e-5)
    assert reranker.rerank(QUESTION, np.ones(4, dtype=np.float32), []) == []
    assert check(Settings(rerank=RerankConfig(kind="cross_encoder", model_path=model)))[0][1] is True


def test_a_folder_without_a_usable_model_is_a_configuration_error_naming_the_key(tmp_path: Path) -> None:
    from service.ranking.cross_encoder import CrossEncoderReranker

    with pytest.raises(ConfigurationError, match=r"rerank\.model_path: .* is not a folder"):
        CrossEncoderReranker(tmp_path / "absent")
    with pytest.raises(ConfigurationError, match=r"rerank\.model_path: .* holds no model"):
        CrossEncoderReranker(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ConfigurationError, match=r"rerank\.model_path: cannot load a CrossEncoder"):
        CrossEncoderReranker(tmp_path)
    two = tiny_cross_encoder(tmp_path / "two", labels=2)
    with pytest.raises(ConfigurationError, match=r"rerank\.model_path: .* 2 labels"):
        CrossEncoderReranker(two)
