"""A store's adapted reranker on disk: the ONNX cross-encoder ``docqa adapt`` trained, and how it is read back.

``<data_dir>/adapted/<store>/model/`` holds ``model.onnx``, the tokenizer it was trained with
(``tokenizer.json``) and ``manifest.json``: the format version, the store it was trained for, the sha256 and
size of both files, how it reads a pair (``max_tokens``), how its score is blended with the offline reranker's
(``blend``, ``depth``), what it was trained on and how it measured. A folder is accepted only whole: a
manifest of another format or another store, a file whose checksum does not match, or a graph ONNX Runtime
cannot run is refused with the reason, and the store falls back to the offline reranker.

A new model is installed by renaming a finished folder into place (the old one kept as ``model.previous``),
so a server reading the folder sees either the old model or the new one, never half of one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from acl.errors import ConfigurationError
from indexer.store_ids import validate_store_id

#: Bump when the graph's inputs or outputs or the manifest's meaning change; older folders are refused.
FORMAT_VERSION = 1
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
MANIFEST_FILE = "manifest.json"
#: The graph's output: one logit per (question, passage) pair.
OUTPUT_NAME = "score"
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
_CHUNK = 1 << 20


class AdaptedModelError(ConfigurationError):
    """A store's adapted model folder is missing, incomplete, corrupt or another store's."""


@dataclass(frozen=True, slots=True)
class Manifest:
    """What ``manifest.json`` says of a model folder."""

    store_id: str
    base_model: str
    layers: int
    max_tokens: int
    #: Weight of the model's (standardised) score against the offline reranker's in the final order, 0..1.
    blend: float
    #: How many of the offline reranker's best candidates the model reorders.
    depth: int
    #: Whose content it learned from: "principals:group:everyone" or "all content".
    scope: str
    trained_at: str
    model_sha256: str
    model_bytes: int
    tokenizer_sha256: str
    metrics: dict[str, Any] = field(default_factory=dict)
    format: int = FORMAT_VERSION

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True) + "\n"

    @classmethod
    def read(cls, path: Path) -> Manifest:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise AdaptedModelError(f"{path}: unreadable manifest ({type(exc).__name__})") from None
        if not isinstance(raw, dict):
            raise AdaptedModelError(f"{path}: the manifest is not a JSON object")
        if raw.get("format") != FORMAT_VERSION:
            raise AdaptedModelError(
                f"{path}: format {raw.get('format')!r}, this version reads format {FORMAT_VERSION} "
                "(run docqa adapt again)"
            )
        try:
            manifest = cls(**raw)
        except TypeError as exc:
            raise AdaptedModelError(f"{path}: not an adapted-model manifest ({exc})") from None
        if not (0.0 <= float(manifest.blend) <= 1.0) or not (1 <= int(manifest.depth) <= 1000):
            raise AdaptedModelError(f"{path}: blend or depth out of range")
        if not (16 <= int(manifest.max_tokens) <= 512):
            raise AdaptedModelError(f"{path}: max_tokens out of range")
        return manifest


def store_folder(data_dir: Path, store_id: str) -> Path:
    """``<data_dir>/adapted/<store>``: the store's model, previous model, work folder and lock."""
    return Path(data_dir) / "adapted" / validate_store_id(store_id)


def model_folder(data_dir: Path, store_id: str) -> Path:
    return store_folder(data_dir, store_id) / "model"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def install(folder: Path, data_dir: Path, store_id: str) -> Path:
    """Make the finished ``folder`` the store's model (the old one becomes ``model.previous``)."""
    target = model_folder(data_dir, store_id)
    previous = target.with_name("model.previous")
    verify(folder, store_id)  # never install what a server would refuse
    target.parent.mkdir(parents=True, exist_ok=True)
    if previous.exists():
        shutil.rmtree(previous)
    if target.exists():
        os.replace(target, previous)
    os.replace(folder, target)
    _fsync_dir(target.parent)
    return target


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def verify(folder: Path, store_id: str) -> Manifest:
    """The folder's manifest when the folder is whole and the store's own; AdaptedModelError naming why not."""
    if not folder.is_dir():
        raise AdaptedModelError(f"store {store_id!r} has no adapted model (run docqa adapt {store_id})")
    manifest = Manifest.read(folder / MANIFEST_FILE)
    if manifest.store_id != store_id:
        raise AdaptedModelError(f"{folder}: the model was trained for store {manifest.store_id!r}, not {store_id!r}")
    for name, want, size in (
        (MODEL_FILE, manifest.model_sha256, manifest.model_bytes),
        (TOKENIZER_FILE, manifest.tokenizer_sha256, None),
    ):
        path = folder / name
        if not path.is_file():
            raise AdaptedModelError(f"{folder}: {name} is missing")
        if size is not None and path.stat().st_size != size:
            raise AdaptedModelError(f"{folder}: {name} has {path.stat().st_size} bytes, the manifest says {size}")
        if sha256(path) != want:
            raise AdaptedModelError(f"{folder}: {name} does not match its checksum")
    return manifest


class PairScorer:
    """Scores (question, passage) pairs with an ONNX cross-encoder; one forward pass at a time."""

    def __init__(self, model: Path, tokenizer: Path, max_tokens: int, *, threads: int | None = None) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
        options.log_severity_level = 3
        try:
            self._session = onnxruntime.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )
            self._tokenizer = Tokenizer.from_file(str(tokenizer))
        except Exception as exc:  # whatever ONNX Runtime or tokenizers raise for a file they cannot read
            raise AdaptedModelError(
                f"{model.parent}: not a model this version can run ({type(exc).__name__})"
            ) from None
        outputs = [o.name for o in self._session.get_outputs()]
        if outputs != [OUTPUT_NAME]:
            raise AdaptedModelError(f"{model.parent}: the graph's outputs are {outputs}, not [{OUTPUT_NAME!r}]")
        self._inputs = [i.name for i in self._session.get_inputs()]
        if not {"input_ids", "attention_mask"} <= set(self._inputs) or not set(self._inputs) <= set(INPUT_NAMES):
            raise AdaptedModelError(f"{model.parent}: the graph's inputs are {self._inputs}")
        self._tokenizer.enable_truncation(max_length=max_tokens, strategy="longest_first")  # a long question is cut too
        self._tokenizer.enable_padding()
        self._lock = threading.Lock()

    def score(self, question: str, passages: Sequence[str]) -> npt.NDArray[np.float64]:
        """One logit per passage (higher: answers the question better)."""
        return self.score_pairs([(question, p) for p in passages])

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float64]:
        """One logit per (question, passage) pair."""
        if not pairs:
            return np.zeros(0, dtype=np.float64)
        encodings = self._tokenizer.encode_batch(list(pairs))
        features: dict[str, Any] = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        with self._lock:
            out = self._session.run([OUTPUT_NAME], {name: features[name] for name in self._inputs})[0]
        return np.asarray(out, dtype=np.float64).reshape(-1)


@dataclass(frozen=True)
class AdaptedModel:
    """A verified model folder, ready to score."""

    folder: Path
    manifest: Manifest
    scorer: PairScorer

    @classmethod
    def load(cls, folder: Path, store_id: str, *, threads: int | None = None) -> AdaptedModel:
        manifest = verify(folder, store_id)
        scorer = PairScorer(folder / MODEL_FILE, folder / TOKENIZER_FILE, manifest.max_tokens, threads=threads)
        return cls(folder, manifest, scorer)
