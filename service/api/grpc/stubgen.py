"""Generation of the Python stubs of ``proto/docqa/v1`` (grpcio-tools and mypy-protobuf).

The build step (``setup.py``'s ``build_py``) runs this module before the wheel or an
editable install is made; ``service.api.grpc.stubs`` runs it again in a source checkout
whose stubs are missing or older than the contract. It imports only the standard library
(the build loads it by file path, before the project's dependencies are installed), and
grpcio-tools and mypy-protobuf when it runs. Generation writes to a temporary folder and
renames it into place, so concurrent processes never see half-written stubs.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sysconfig
import tempfile
from pathlib import Path

PROTO_ROOT = Path(__file__).resolve().parents[3] / "proto"
GEN_DIR = Path(__file__).resolve().parent / "_gen"
NAMES = ("common", "query", "indexing", "admin", "analysis", "history")
STAMP = "SOURCE_HASH"
_PLUGINS = ("protoc-gen-mypy", "protoc-gen-mypy_grpc")


class StubGenerationError(RuntimeError):
    """protoc could not compile the contract, or a tool it needs is missing."""


def proto_files(root: Path = PROTO_ROOT) -> list[Path]:
    """The contract's ``.proto`` files, in a stable order."""
    return sorted((root / "docqa" / "v1").glob("*.proto"))


def source_hash(root: Path = PROTO_ROOT) -> str:
    """A digest of the contract that the generated package is stamped with."""
    digest = hashlib.sha256()
    for path in proto_files(root):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def fresh(target: Path = GEN_DIR, root: Path = PROTO_ROOT) -> bool:
    """Whether ``target`` holds stubs generated from the contract as it is now."""
    stamp = target / STAMP
    return stamp.is_file() and stamp.read_text() == source_hash(root)


def _plugin(name: str) -> Path | None:
    found = shutil.which(name)
    if found is not None:
        return Path(found)
    beside = Path(sysconfig.get_path("scripts")) / name
    return beside if beside.is_file() else None


def _typed_args(out: Path, required: bool) -> list[str]:
    """mypy-protobuf's options (typed ``.pyi`` of the messages and the services); protoc's own message
    ``.pyi`` where it is not installed and not ``required`` (a source checkout installed without it)."""
    plugins = [_plugin(name) for name in _PLUGINS]
    if None in plugins:
        if required:
            raise StubGenerationError("protoc-gen-mypy not found: install mypy-protobuf (a build requirement)")
        return [f"--pyi_out={out}"]
    return [
        *(f"--plugin={name}={path}" for name, path in zip(_PLUGINS, plugins, strict=True)),
        f"--mypy_out=quiet:{out}",
        f"--mypy_grpc_out=quiet:{out}",
    ]


def _relative(text: str) -> str:
    """protoc and mypy-protobuf import ``docqa.v1``; make those imports package-relative."""
    text = text.replace("from docqa.v1 import ", "from . import ")
    # mypy-protobuf: "import docqa.v1.common_pb2" and uses "docqa.v1.common_pb2.X".
    text = re.sub(r"^import docqa\.v1\.(\w+)$", r"from . import \1", text, flags=re.MULTILINE)
    return re.sub(r"\bdocqa\.v1\.(\w+_pb2)\b", r"\1", text)


def generate(target: Path = GEN_DIR, root: Path = PROTO_ROOT, *, required: bool = False) -> None:
    """Run protoc over ``root`` and write an importable, typed package (``.py`` and ``.pyi``) to ``target``;
    ``required``: mypy-protobuf must type it (the build step)."""
    from grpc_tools import protoc  # type: ignore[import-untyped,unused-ignore]

    protos = proto_files(root)
    if not protos:
        raise StubGenerationError(f"no .proto files under {root}")
    include = Path(protoc.__file__).parent / "_proto"
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".grpc_gen-") as tmp:
        out = Path(tmp) / "out"
        out.mkdir()
        args = [
            "grpc_tools.protoc",
            f"-I{root}",
            f"-I{include}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            *_typed_args(out, required),
            *(str(p.relative_to(root)) for p in protos),
        ]
        if protoc.main(args) != 0:
            raise StubGenerationError("grpc_tools.protoc failed to compile proto/docqa/v1")
        package = Path(tmp) / "package"
        package.mkdir()
        for path in (out / "docqa" / "v1").iterdir():
            (package / path.name).write_text(_relative(path.read_text()))
        (package / "__init__.py").write_text(
            '"""Generated from proto/docqa/v1 by service.api.grpc.stubgen; do not edit."""\n'
        )
        (package / "py.typed").write_text("")
        (package / STAMP).write_text(source_hash(root))
        old = Path(tmp) / "old"
        if target.exists():
            target.rename(old)
        try:
            package.rename(target)
        except OSError:  # another process won the race; its stubs are as good as ours
            if old.exists() and not target.exists():
                old.rename(target)
        if old.exists():
            shutil.rmtree(old, ignore_errors=True)
