"""bf16 encoding of the ONNX export through OpenVINO (``embedding.quantize: bf16``).

OpenVINO compiles the same fp32 export with bf16 inference precision: weights
and activations in bfloat16 on the CPU's bf16 instructions (``avx512_bf16``, or
AMX tiles), accumulation in fp32. Nothing else changes: same file, tokenizer,
pooling and normalisation. Measured on 2 cores (docs/performance.md "Encoder
precision"): ~2-3x the chunks/s of fp32 ONNX Runtime, cosine to fp32 > 0.999,
both quality benchmarks' hit@1 and hit@5 within 0.01 of fp32.

A CPU without bf16 instructions would emulate it, slower than fp32, so bf16 is
used only where ``/proc/cpuinfo`` names them; OpenVINO is an optional extra
(``pip install 'docqa[openvino]'``). Where either is missing the embedder keeps
fp32 ONNX Runtime and says why once (``bf16_unavailable``, also in ``docqa doctor``).
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

#: The CPU flags (``/proc/cpuinfo``) of native bf16 arithmetic: AVX-512 BF16 (Zen 4, Cooper Lake) or AMX.
BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
CPUINFO = Path("/proc/cpuinfo")


def cpu_flags(cpuinfo: Path = CPUINFO) -> frozenset[str]:
    """The CPU's feature flags as the kernel lists them; empty where it does not (not Linux)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def openvino_installed() -> bool:
    """Whether the ``openvino`` package can be imported (without importing it)."""
    return importlib.util.find_spec("openvino") is not None


def bf16_unavailable(flags: frozenset[str] | None = None, *, installed: bool | None = None) -> str | None:
    """Why bf16 encoding cannot be used here, or None when it can."""
    flags = cpu_flags() if flags is None else flags
    if not flags & BF16_FLAGS:
        return "the CPU has no bf16 instructions (avx512_bf16 or amx_bf16)"
    if not (openvino_installed() if installed is None else installed):
        return "OpenVINO is not installed (pip install 'docqa[openvino]')"
    return None


class OpenVinoSession:
    """An ONNX model compiled by OpenVINO in bf16, run like an ONNX Runtime session (``run``, input names)."""

    def __init__(self, path: Path, *, threads: int) -> None:
        import openvino

        core = openvino.Core()
        config = {"INFERENCE_PRECISION_HINT": "bf16", "INFERENCE_NUM_THREADS": threads}
        self._model: Any = core.compile_model(str(path), "CPU", config)
        self.input_names: list[str] = [item.get_any_name() for item in self._model.inputs]
        width = self._model.outputs[0].get_partial_shape()[-1]
        self.output_width: int | None = width.get_length() if width.is_static else None
        # An infer request runs one call at a time: one per thread, as ONNX Runtime's session allows.
        self._local = threading.local()

    def run(self, outputs: Sequence[str], feed: Mapping[str, npt.NDArray[np.int64]]) -> list[npt.NDArray[np.float32]]:
        """The named outputs for one batch of inputs, as float32 arrays."""
        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self._model.create_infer_request()
        result = request.infer(dict(feed))
        named = {name: value for port, value in result.items() for name in port.get_names()}
        return [np.array(named[name], dtype=np.float32) for name in outputs]
