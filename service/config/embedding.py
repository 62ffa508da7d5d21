"""The embedder: its model and backend, how a folder run feeds it, how questions are batched into it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from service.config.base import _Section


class EmbeddingConfig(_Section):
    #: The packaged all-MiniLM-L6-v2, a model folder, or a cached model name.
    model: str = "all-MiniLM-L6-v2"
    batch_size: int = Field(32, ge=1, le=4096)
    device: str | None = None
    #: ``onnx``: ONNX Runtime on an export of the model made once and cached (``<data_dir>/models``, and the
    #: cache shared by data directories, ``DOCQA_MODEL_CACHE``); falls back to ``torch`` with a warning when the
    #: export cannot be made. ``torch``: sentence-transformers. Same vectors; see README "Embedder backends".
    backend: Literal["torch", "onnx"] = "onnx"
    #: ``int8``: the ONNX export's weights quantised to int8 per channel (``indexer/onnx_quantize.py``), checked
    #: against fp32 and made once like the export: ~1.6x faster encoding than fp32, vectors at cosine ~0.995 to fp32,
    #: hit@5 kept and hit@1 ~0.02 lower on the quality benchmark. Vectors of one store should come from one
    #: setting: switch on a new store or re-index (``docqa index --reindex``). ``bf16``: the fp32 export compiled by
    #: OpenVINO in bfloat16 (``pip install 'docqa[openvino]'``, a CPU with avx512_bf16 or AMX): 2-2.6x fp32's
    #: chunks per core here, vectors at cosine ~0.9999 to fp32; fp32 with one warning where it cannot run
    #: (``docqa doctor`` says which). ``none``: fp32.
    quantize: Literal["none", "int8", "bf16"] = "none"

    @model_validator(mode="after")
    def _quantized_needs_onnx(self) -> EmbeddingConfig:
        if self.quantize != "none" and (self.backend != "onnx" or self.device not in (None, "cpu")):
            raise ValueError(f"embedding.quantize {self.quantize} needs embedding.backend onnx on the CPU")
        return self


class IndexingConfig(_Section):
    """How a folder run (``docqa index``) feeds the encoder (``indexer.ingest.pipeline``)."""

    #: Batches of chunks read, parsed and chunked ahead of the encoder in a background thread while it
    #: encodes; 0 = one thread, each file read when the encoder wants it. See README "Embedder backends".
    prefetch_batches: int = Field(2, ge=0, le=16)


class QueryBatchingConfig(_Section):
    """Concurrent questions embedded in one encoder call (``indexer.query_batcher``)."""

    #: Batch the questions of concurrent queries; off: each question is its own encoder call.
    enabled: bool = True
    #: Most questions in one encoder call.
    max_batch: int = Field(32, ge=1, le=1024)
    #: How long the first question of a batch waits for others (milliseconds; 0 = only those queued already:
    #: questions that arrive while the encoder is busy still form the next batch, and an idle server's
    #: question waits for nothing; 1 ms cost a lone question 1.7 ms of its p50).
    max_wait_ms: float = Field(0.0, ge=0, le=50)
    #: Most questions waiting; a caller finding it full waits up to queue_timeout_s, then RESOURCE_EXHAUSTED.
    max_queue: int = Field(256, ge=1, le=100_000)
    queue_timeout_s: float = Field(1.0, ge=0, le=60)
