"""The ONNX Runtime adapter of the Embedder port.

The configured sentence-transformers model is exported to ONNX once
(``indexer/onnx_model.py``) and then run by ONNX Runtime with the fast
``tokenizers`` library: texts are tokenised in one call, sorted by length and
cut into buckets padded only to their own longest text, so short texts do not
pay for long ones. Once the export exists nothing here imports torch, which is
what makes a cold process fast.

``embedding.quantize: bf16`` runs the same export through OpenVINO in bf16
(``indexer/embedder_openvino.py``) where the CPU and the installed packages
allow, and fp32 ONNX Runtime otherwise, saying why once.

When ONNX Runtime is missing or the export cannot be made, the embedder logs
one warning naming the cause and embeds with the sentence-transformers (torch)
adapter instead: same vectors, slower.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from indexer.embedder import (
    MAX_CHUNK_TOKENS,
    PACKAGED_MODEL,
    Embedder,
    HFTokenizer,
    SentenceTransformerEmbedder,
    Tokenizer,
    resolve_model_path,
)
from indexer.onnx_model import OUTPUT_NAME, Exporter, OnnxExportError, cached_export

if TYPE_CHECKING:
    import numpy.typing as npt

log = logging.getLogger(__name__)


def default_threads() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _torch_exporter(model_dir: Path, target: Path) -> None:
    from indexer.onnx_torch_export import export_with_torch

    export_with_torch(model_dir, target)


class OnnxEmbedder(Embedder):
    """Embeds with an ONNX export of a sentence-transformers model; falls back to torch if there is none."""

    def __init__(
        self,
        model: str = PACKAGED_MODEL,
        *,
        caches: Sequence[Path],
        batch_size: int = 32,
        threads: int | None = None,
        exporter: Exporter = _torch_exporter,
        quantize: Literal["none", "int8", "bf16"] = "none",
        spinning: bool = True,
    ) -> None:
        self.model_name = model
        # ONNX Runtime's idle pool threads spin for work by default: right for back-to-back batches
        # (``docqa index``), but a server's questions come one at a time, and on 2 cores the spinning
        # thread took CPU from the searches around it (4 and 16 gRPC clients: +15-27 % req/s with it off).
        # A server's own ingestion (uploads) shares its non-spinning embedder.
        self._spinning = spinning
        self._quantize = quantize
        self._source = resolve_model_path(model)
        self._caches = list(caches)
        self._batch_size = batch_size
        self._threads = threads or default_threads()
        self._exporter = exporter
        self._lock = threading.Lock()
        self._session: Any = None
        self._fallback: SentenceTransformerEmbedder | None = None
        self._inputs: list[str] = []
        self._tokenizer: HFTokenizer | None = None
        self._encoder: Any = None
        if isinstance(self._source, Path):
            config = _read_config(self._source)
            self.dimension, self.max_tokens = config["dimension"], config["max_tokens"]
            self._lower = bool(config["lower"])
        else:  # a hub name: no folder to export from, so torch from the start
            self._fallback = self._torch(f"{model!r} is not a model folder")
            self.dimension, self.max_tokens, self._lower = self._fallback.dimension, self._fallback.max_tokens, False

    @property
    def backend(self) -> str:
        """``onnx`` (``onnx-int8`` quantised, ``openvino-bf16``), or ``torch`` once the embedder has fallen back."""
        if self._fallback is not None:
            return "torch"
        return {"int8": "onnx-int8", "bf16": "openvino-bf16"}.get(self._quantize, "onnx")

    @property
    def tokenizer(self) -> Tokenizer:
        if self._fallback is not None:
            return self._fallback.tokenizer
        if self._tokenizer is None:
            assert isinstance(self._source, Path)
            self._tokenizer = HFTokenizer(self._source / "tokenizer.json")
        return self._tokenizer

    def _torch(self, cause: str) -> SentenceTransformerEmbedder:
        log.warning("embedding.backend onnx unavailable (%s); embedding with torch instead", cause)
        return SentenceTransformerEmbedder(self.model_name, batch_size=self._batch_size)

    def _ready(self) -> SentenceTransformerEmbedder | None:
        """Load the session on first use (exporting if needed); the torch fallback when that fails."""
        with self._lock:
            if self._session is None and self._fallback is None:
                try:
                    self._session, self._encoder = self._load()
                except OnnxExportError as exc:
                    self._fallback = self._torch(str(exc))
            return self._fallback

    def _load(self) -> tuple[Any, Any]:
        assert isinstance(self._source, Path)
        try:
            import onnxruntime
        except ImportError as exc:
            raise OnnxExportError(f"onnxruntime is not installed: {exc}") from exc
        path = cached_export(self.model_name, self._source, self._caches, self._exporter)
        if self._quantize == "int8":
            path = self._int8(path)
        session = self._bf16(path) if self._quantize == "bf16" else None
        if session is None:
            session = self._onnxruntime(onnxruntime, path)
            self._inputs = [item.name for item in session.get_inputs()]
            width = session.get_outputs()[0].shape[-1]
        else:
            self._inputs, width = session.input_names, session.output_width
        if isinstance(width, int) and width != self.dimension:
            raise OnnxExportError(f"the export gives {width}-d vectors, the model's files say {self.dimension}")
        from tokenizers import Tokenizer as _HF

        encoder = _HF.from_file(str(self._source / "tokenizer.json"))
        encoder.no_padding()
        encoder.enable_truncation(max_length=self.max_tokens)
        return session, encoder

    def _onnxruntime(self, onnxruntime: Any, path: Path) -> Any:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        if not self._spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # a file that passed its checksum but ONNX Runtime refuses
            raise OnnxExportError(f"ONNX Runtime cannot load {path}: {exc}") from exc
        return session

    def _bf16(self, fp32: Path) -> Any:
        """The export compiled by OpenVINO in bf16; None (fp32 ONNX Runtime, said once) where it cannot be."""
        from indexer.embedder_openvino import OpenVinoSession, bf16_unavailable

        cause = bf16_unavailable()
        if cause is None:
            try:
                session = OpenVinoSession(fp32, threads=self._threads)
            except Exception as exc:  # OpenVINO refusing the graph or the device: fp32 still works
                cause = f"OpenVINO cannot compile {fp32}: {type(exc).__name__}: {exc}"
            else:
                log.info("embedding.quantize bf16: encoding with OpenVINO in bf16")
                return session
        log.warning("embedding.quantize bf16 unavailable (%s); embedding with the fp32 ONNX export", cause)
        self._quantize = "none"
        return None

    def _int8(self, fp32: Path) -> Path:
        """The int8 quantisation of the fp32 export (made once and cached like it); the fp32 export when it fails."""
        from indexer.onnx_quantize import int8_exporter

        assert isinstance(self._source, Path)
        exporter = int8_exporter(fp32, lower=self._lower, max_tokens=self.max_tokens)
        try:
            return cached_export(f"{self.model_name}-int8", self._source, self._caches, exporter)
        except OnnxExportError as exc:
            log.warning("embedding.quantize int8 unavailable (%s); embedding with the fp32 ONNX export", exc)
            self._quantize = "none"
            return fp32

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        fallback = self._ready()
        if fallback is not None:
            return fallback.embed_documents(texts)
        batch = [text.lower() for text in texts] if self._lower else list(texts)
        encodings = self._encoder.encode_batch(batch)
        lengths = np.fromiter((len(encoding.ids) for encoding in encodings), dtype=np.int64, count=len(encodings))
        order = np.argsort(lengths, kind="stable")
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            out[rows] = self._run([encodings[i] for i in rows], int(lengths[rows].max()))
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.ascontiguousarray(out / np.maximum(norms, 1e-12), dtype=np.float32)

    def _run(self, bucket: list[Any], width: int) -> npt.NDArray[np.float32]:
        """One bucket, padded to its longest text."""
        arrays = {name: np.zeros((len(bucket), width), dtype=np.int64) for name in self._inputs}
        for row, encoding in enumerate(bucket):
            n = len(encoding.ids)
            arrays["input_ids"][row, :n] = encoding.ids
            arrays["attention_mask"][row, :n] = 1
            if "token_type_ids" in arrays:
                arrays["token_type_ids"][row, :n] = encoding.type_ids
        result: npt.NDArray[np.float32] = self._session.run([OUTPUT_NAME], arrays)[0]
        return result


def _read_config(source: Path) -> dict[str, int]:
    """Dimension, token limit and lower-casing from the model's files, without torch."""
    from acl.errors import ConfigurationError

    try:
        bert = json.loads((source / "sentence_bert_config.json").read_text())
        hf = json.loads((source / "config.json").read_text())
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"embedding.model: cannot read model files under {source}: {exc}") from exc
    dimension = int(hf["hidden_size"])  # as the torch adapter reads it
    return {
        "dimension": dimension,
        "max_tokens": min(MAX_CHUNK_TOKENS, int(bert["max_seq_length"])),
        "lower": int(bool(bert.get("do_lower_case", False))),
    }
