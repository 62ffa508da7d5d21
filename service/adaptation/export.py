"""The trained cross-encoder as ONNX: fp32 from torch, then an int8 copy (ONNX Runtime's dynamic quantisation).

The int8 copy stores the weights of every ``MatMul`` and the token embedding table (``Gather``) as int8 with a
scale per channel: a 3-layer model goes from ~70 MB to ~18 MB.

The fp32 graph is checked against torch on probe pairs before it is accepted; which of the two is installed
is the evaluation's call (``evaluation.pick_precision``): int8 where it keeps the ranking.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from service.adaptation.training import PairEncoder
from service.ranking.adapted_model import INPUT_NAMES, OUTPUT_NAME, PairScorer

#: Largest difference between torch's and the fp32 graph's logits on the probes.
MAX_LOGIT_DIFFERENCE = 1e-2
PROBES = (
    ("a", "b"),
    ("How many vacation days do I get?", "Employees get 25 days of paid vacation a year. " * 3),
    ("max_wal_senders", "word " * 600),
)


class ExportError(Exception):
    """The model could not be written as ONNX, or the graph does not give the model's scores."""


def export_fp32(model: Any, tokenizer_file: Path, max_tokens: int, target: Path) -> None:
    import torch

    class _Score(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).logits.view(-1)

    encode = PairEncoder(tokenizer_file, max_tokens)
    features = encode(list(PROBES), "cpu")
    axes: dict[str, dict[int, str]] = {name: {0: "batch", 1: "tokens"} for name in INPUT_NAMES}
    axes[OUTPUT_NAME] = {0: "batch"}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        quiet = logging.getLogger("torch.onnx")
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            torch.onnx.export(
                _Score().eval(),
                tuple(features[name] for name in INPUT_NAMES),
                str(target),
                input_names=list(INPUT_NAMES),
                output_names=[OUTPUT_NAME],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
        finally:
            quiet.setLevel(level)
        want = _Score().eval()(*(features[name] for name in INPUT_NAMES)).numpy()
    got = PairScorer(target, tokenizer_file, max_tokens).score_pairs(list(PROBES))
    difference = float(np.abs(got - want).max())
    if not difference <= MAX_LOGIT_DIFFERENCE:
        raise ExportError(f"the ONNX graph's scores differ from the model's by {difference:.4f}")


def quantize_int8(fp32: Path, target: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from indexer.onnx_quantize import _PreprocessingAdvice

    quiet = _PreprocessingAdvice()
    logging.getLogger().addFilter(quiet)
    try:
        quantize_dynamic(
            str(fp32),
            str(target),
            per_channel=True,
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul", "Gather"],  # Gather: the token embeddings, two thirds of the file
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    finally:
        logging.getLogger().removeFilter(quiet)
