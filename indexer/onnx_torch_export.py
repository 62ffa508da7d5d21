"""Exports a sentence-transformers model to ONNX with torch, pooling and normalisation inside the graph.

The whole sentence-transformers pipeline after the tokenizer (the transformer,
then whatever ``modules.json`` lists: pooling, dense layers, normalisation) is
traced, so the graph's ``sentence_embedding`` is the model's own vector by
construction. The export is checked against ``model.encode`` on probe texts of
very different lengths before it is accepted.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from indexer.onnx_model import OUTPUT_NAME, PROBES, OnnxExportError

INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
#: Below this cosine with ``model.encode`` on any probe, an export is refused.
MIN_COSINE = 0.999


def export_with_torch(model_dir: Path, target: Path) -> None:
    """Write the ONNX export of the sentence-transformers model in ``model_dir`` to ``target``."""
    for key, value in {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "TRANSFORMERS_VERBOSITY": "error",
    }.items():
        os.environ.setdefault(key, value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.onnx and transformers warn about tracing; none of it matters here
        quiet = [logging.getLogger(name) for name in ("torch.onnx", "transformers", "sentence_transformers")]
        levels = [logger.level for logger in quiet]
        for logger in quiet:
            logger.setLevel(logging.ERROR)
        try:
            _export(model_dir, target)
        finally:
            for logger, level in zip(quiet, levels, strict=True):
                logger.setLevel(level)


def _export(model_dir: Path, target: Path) -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir), device="cpu").eval()
    features = model.tokenize(["hello world", "a somewhat longer sentence to trace with"])
    names = [name for name in INPUT_NAMES if name in features]
    if "input_ids" not in names or "attention_mask" not in names:
        raise OnnxExportError(f"the tokenizer gives {sorted(features)}, not input_ids and attention_mask")

    class _Pipeline(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: Any) -> Any:
            return self.model(dict(zip(names, inputs, strict=True)))[OUTPUT_NAME]

    axes: dict[str, dict[int, str]] = {name: {0: "batch", 1: "tokens"} for name in names}
    axes[OUTPUT_NAME] = {0: "batch"}
    with torch.no_grad():
        torch.onnx.export(
            _Pipeline().eval(),
            tuple(features[name] for name in names),
            str(target),
            input_names=names,
            output_names=[OUTPUT_NAME],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
    _check(model, target, names)


def _check(model: Any, target: Path, names: list[str]) -> None:
    import onnxruntime

    session = onnxruntime.InferenceSession(str(target), providers=["CPUExecutionProvider"])
    features = model.tokenize(list(PROBES))
    got = session.run([OUTPUT_NAME], {name: features[name].numpy().astype(np.int64) for name in names})[0]
    want = model.encode(list(PROBES), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    got = got / np.maximum(np.linalg.norm(got, axis=1, keepdims=True), 1e-12)
    cosine = float((got * want).sum(axis=1).min())
    if not cosine >= MIN_COSINE:
        raise OnnxExportError(f"the export's vectors differ from the model's (cosine {cosine:.4f} < {MIN_COSINE})")
