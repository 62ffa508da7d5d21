"""The ONNX export of a sentence-transformers model, made once and cached by the model files' hash.

``<data_dir>/models/<model>-<hash>/model.onnx`` holds the export next to
``model.json`` (its sha256, size and format version). A file whose checksum does
not match is never used: it is exported again. A shared cache
(``DOCQA_MODEL_CACHE``, default ``~/.cache/docqa``) is looked at before
exporting and filled after, so fresh data directories (tests, new stores,
containers with a mounted cache) do not export again. Writers hold a lock on the
folder and rename finished files into place, so two processes exporting at
once neither corrupt the file nor export twice.

Nothing here imports torch unless an export is actually needed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

#: Bump when the exported graph changes (inputs, outputs, pooling), so old exports are not reused.
FORMAT_VERSION = 1
MODEL_FILE = "model.onnx"
MANIFEST_FILE = "model.json"
SHARED_CACHE_ENV = "DOCQA_MODEL_CACHE"
_CHUNK = 1 << 20

#: Writes the ONNX export of the sentence-transformers model in the first folder to the second path.
Exporter = Callable[[Path, Path], None]
#: The graph's output: the sentence-transformers pipeline's vector, pooling and normalisation included.
OUTPUT_NAME = "sentence_embedding"
#: Texts of very different lengths that an export's vectors are checked on before it is accepted.
PROBES = (
    "a",
    "How many vacation days do I get?",
    "  Leading and trailing spaces, UPPER case, digits 12345 and ünïcödé.  ",
    "The quick brown fox jumps over the lazy dog. " * 20,
    "word " * 600,  # longer than the model reads: truncated
)


class OnnxExportError(Exception):
    """The model could not be exported (or its export does not reproduce the model's vectors)."""


def shared_cache_dir() -> Path | None:
    """The cache shared by every data directory on this machine; None when ``DOCQA_MODEL_CACHE`` is empty."""
    value = os.environ.get(SHARED_CACHE_ENV)
    if value is None:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base) / "docqa"
    return Path(value).expanduser() if value.strip() else None


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _model_files(source: Path) -> list[Path]:
    return sorted(p for p in source.rglob("*") if p.is_file() and not p.name.startswith(".") and p.name != "README.md")


def model_fingerprint(source: Path, cache: Path | None = None) -> str:
    """A short hash of the model folder's files (names and contents).

    Hashing ~100 MB of weights takes a noticeable part of a cold start, so the
    result is remembered in ``cache`` under the files' sizes and modification
    times; any change to a file changes that key and the contents are hashed again.
    """
    files = _model_files(source)
    stat_key = hashlib.sha256()
    for path in files:
        info = path.stat()
        stat_key.update(f"{path.relative_to(source).as_posix()}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    memo = cache / "fingerprints" / f"{stat_key.hexdigest()[:32]}.txt" if cache is not None else None
    if memo is not None:
        with contextlib.suppress(OSError):
            remembered = memo.read_text().strip()
            if re.fullmatch(r"[0-9a-f]{16}", remembered):
                return remembered
    digest = hashlib.sha256(f"docqa-onnx-{FORMAT_VERSION}\n".encode())
    for path in files:
        digest.update(path.relative_to(source).as_posix().encode() + b"\0" + _file_sha256(path).encode() + b"\n")
    fingerprint = digest.hexdigest()[:16]
    if memo is not None:
        with contextlib.suppress(OSError):
            memo.parent.mkdir(parents=True, exist_ok=True)
            _write_atomically(memo, fingerprint.encode())
    return fingerprint


def _slug(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(model).name or model).strip("._") or "model"


def _write_atomically(target: Path, data: bytes) -> None:
    handle, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def valid_export(folder: Path) -> Path | None:
    """``folder/model.onnx`` when its manifest and checksum match; None otherwise (missing or corrupt)."""
    model, manifest = folder / MODEL_FILE, folder / MANIFEST_FILE
    try:
        meta = json.loads(manifest.read_text())
        if meta.get("format") != FORMAT_VERSION or model.stat().st_size != meta.get("size"):
            return None
        return model if _file_sha256(model) == meta.get("sha256") else None
    except (OSError, ValueError, AttributeError):
        return None


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _install(folder: Path, produce: Callable[[Path], None]) -> Path:
    """Under the folder's lock: produce ``model.onnx`` in a temp file, checksum it, rename both into place."""
    handle, name = tempfile.mkstemp(dir=folder, prefix=".model.", suffix=".onnx.tmp")
    os.close(handle)
    temp = Path(name)
    try:
        produce(temp)
        meta = {"format": FORMAT_VERSION, "size": temp.stat().st_size, "sha256": _file_sha256(temp)}
        with contextlib.suppress(OSError):
            (folder / MANIFEST_FILE).unlink()  # no manifest ever vouches for a half-replaced model
        os.replace(temp, folder / MODEL_FILE)
        _write_atomically(folder / MANIFEST_FILE, json.dumps(meta).encode())
    finally:
        with contextlib.suppress(OSError):
            temp.unlink()
    return folder / MODEL_FILE


def _copy(source: Path) -> Callable[[Path], None]:
    def produce(temp: Path) -> None:
        shutil.copyfile(source, temp)

    return produce


def _export(exporter: Exporter, model_dir: Path) -> Callable[[Path], None]:
    def produce(temp: Path) -> None:
        try:
            exporter(model_dir, temp)
        except OnnxExportError:
            raise
        except Exception as exc:
            raise OnnxExportError(f"{type(exc).__name__}: {exc}") from exc

    return produce


def cached_export(model: str, model_dir: Path, caches: Sequence[Path], exporter: Exporter) -> Path:
    """The path of a verified ONNX export of ``model_dir``: found in ``caches`` (in order), or exported once.

    The first cache is the data directory's; a valid export found in a later
    one (the shared cache) is used from there. A new export is written to the
    first and copied into the later ones. Raises OnnxExportError when it cannot be made.
    """
    if not caches:
        raise OnnxExportError("no model cache folder")
    shared = caches[-1] if len(caches) > 1 else None
    folder_name = f"{_slug(model)}-{model_fingerprint(model_dir, shared)}"
    folders = [cache / "models" / folder_name for cache in caches]
    found = _first_valid(folders)
    if found is not None:
        return found
    primary = folders[0]
    try:
        with _locked(primary):
            found = _first_valid(folders)  # another process may have finished it while we waited
            if found is not None:
                return found
            made = _install(primary, _export(exporter, model_dir))
    except OSError as exc:
        raise OnnxExportError(f"cannot write the ONNX model under {primary.parent}: {exc}") from exc
    for folder in folders[1:]:
        with contextlib.suppress(OSError), _locked(folder):
            if valid_export(folder) is None:
                _install(folder, _copy(made))
    return made


def _first_valid(folders: Sequence[Path]) -> Path | None:
    for folder in folders:
        found = valid_export(folder)
        if found is not None:
            return found
    return None
