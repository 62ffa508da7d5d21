"""The wheel carries the gRPC stubs its build step generated (setup.py), typed, and serves without proto/."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.e2e.test_fresh_clone import ROOT, _tracked_files

pytestmark = pytest.mark.slow

NAMES = ("common", "query", "indexing", "admin", "analysis", "history")
GEN = "service/api/grpc/_gen"

#: Run from the unpacked wheel, the repository's root not on sys.path (its virtual environment may live under it,
#: as .ci/run's does, and stays): the stubs import without proto/ beside them.
PROBE = """
import sys
from pathlib import Path
here = Path.cwd().resolve()
sys.path[:] = [str(here)] + [p for p in sys.path[1:] if p and Path(p).resolve() != Path({root!r}).resolve()]
from service.api.grpc import stubgen, stubs
assert Path(stubs.__file__).resolve().is_relative_to(here), stubs.__file__
assert not stubgen.proto_files(), "proto/ is in the wheel"
request = stubs.query_pb2.VectorQueryRequest(store_id="s", question="q", level=0.5)
assert stubs.query_pb2.VectorQueryRequest.FromString(request.SerializeToString()) == request
print(",".join(stubs.load().service_names()))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a clone of this checkout that has no generated stubs: the build step makes them."""
    clone = tmp_path_factory.mktemp("clone")
    for name in _tracked_files():
        if not name.startswith(GEN):
            target = clone / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, target)
    assert not (clone / GEN).exists()
    out = tmp_path_factory.mktemp("dist")
    # No build isolation: the build requirements (setuptools, grpcio-tools, mypy-protobuf) are the test extras'.
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(clone)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    (built,) = out.glob("docqa-*.whl")
    return built


def test_the_wheel_holds_the_generated_modules_and_their_typed_stubs(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in NAMES:
        assert f"{GEN}/{name}_pb2.py" in names and f"{GEN}/{name}_pb2.pyi" in names
        if name != "common":
            assert f"{GEN}/{name}_pb2_grpc.py" in names and f"{GEN}/{name}_pb2_grpc.pyi" in names
    assert {f"{GEN}/__init__.py", f"{GEN}/py.typed", f"{GEN}/SOURCE_HASH"} <= names
    assert not [n for n in names if n.startswith("proto/") or n.endswith(".proto")]


def test_the_stubs_import_from_the_wheel_without_proto(wheel: Path, tmp_path: Path) -> None:
    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(root=str(ROOT))],
        cwd=unpacked,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "docqa.v1.QueryService" in result.stdout and "docqa.v1.HistoryService" in result.stdout
