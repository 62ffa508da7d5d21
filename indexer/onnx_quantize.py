"""Dynamic int8 quantisation of the ONNX export (``embedding.quantize: int8``), checked against the fp32 export.

ONNX Runtime's ``quantize_dynamic`` stores the weights of every ``MatMul`` as
int8 with one scale per output channel (per channel keeps the vectors far
closer than one scale per tensor) and quantises activations on the fly.
Nothing else changes: same tokenizer, same pooling and normalisation.

The quantised model is checked against the fp32 export on probe texts of very
different lengths and refused below ``MIN_INT8_COSINE``; the embedder then
keeps the fp32 export (and says so once). Measured on the PostgreSQL manual
(README "Embedder backends"): mean cosine to fp32 ~0.995, ``bench/quality.py``
hit@5 within 0.01 of fp32, hit@1 ~0.02 lower, encoding ~1.6x faster than fp32.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from indexer.onnx_model import OUTPUT_NAME, Exporter, OnnxExportError
from indexer.onnx_model import PROBES as EXPORT_PROBES

#: Below this cosine with the fp32 export on any probe, a quantised model is refused.
MIN_INT8_COSINE = 0.98
#: The export's probes, and two more of the kinds of text indexed and asked.
PROBES = (
    *EXPORT_PROBES,
    "Which setting decides which network interfaces the server accepts connections on?",
    "SELECT count(*) FROM chunks WHERE store_id = 'acme';",
)


class _PreprocessingAdvice(logging.Filter):
    """``quantize_dynamic`` logs advice meant for image models on the root logger; it says nothing here."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Please consider to run pre-processing before quantization")


def int8_exporter(fp32: Path, *, lower: bool, max_tokens: int) -> Exporter:
    """An exporter writing the int8 quantisation of the fp32 export ``fp32`` (checked before it is accepted)."""

    def export(model_dir: Path, target: Path) -> None:
        try:
            import onnx
            from onnxruntime.quantization import QuantType, quantize_dynamic
        except ImportError as exc:
            raise OnnxExportError(f"onnxruntime.quantization is not available: {exc}") from exc
        quiet = _PreprocessingAdvice()
        logging.getLogger().addFilter(quiet)
        try:
            quantize_dynamic(
                str(fp32),
                str(target),
                per_channel=True,
                weight_type=QuantType.QInt8,
                op_types_to_quantize=["MatMul"],
                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
            )
        finally:
            logging.getLogger().removeFilter(quiet)
        cosine = probe_cosine(model_dir, fp32, target, lower=lower, max_tokens=max_tokens)
        if not cosine >= MIN_INT8_COSINE:
            raise OnnxExportError(
                f"the int8 model's vectors differ from the fp32 export's (cosine {cosine:.4f} < {MIN_INT8_COSINE})"
            )

    return export


def probe_cosine(model_dir: Path, fp32: Path, other: Path, *, lower: bool, max_tokens: int) -> float:
    """The lowest cosine between the two models' vectors of the probe texts."""
    import onnxruntime
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.enable_padding()
    encodings = tokenizer.encode_batch([p.lower() if lower else p for p in PROBES])
    features = {
        "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
    }
    vectors = []
    for path in (fp32, other):
        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        inputs = {item.name: features[item.name] for item in session.get_inputs()}
        out = np.asarray(session.run([OUTPUT_NAME], inputs)[0], dtype=np.float64)
        vectors.append(out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12))
    return float((vectors[0] * vectors[1]).sum(axis=1).min())
