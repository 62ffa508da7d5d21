"""A fresh clone runs the tests on its own: nothing they read lives outside the repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC_SUITES = ("tests/unit/test_opensearch_requests.py", "tests/unit/test_opensearch_responses.py")


def _tracked_files() -> list[str]:
    """What a clone of this checkout holds: committed files plus new ones git does not ignore."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: nothing to clone")
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [name for name in listed.split("\0") if name and (ROOT / name).is_file()]


def test_opensearch_suites_pass_in_a_clone_without_shared(tmp_path: Path) -> None:
    # tmp/clone has no ../shared beside it, as a user's clone would not.
    clone = tmp_path / "clone"
    for name in _tracked_files():
        target = clone / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, target)
    assert not (clone.parent / "shared").exists()
    env = {k: v for k, v in os.environ.items() if k != "OPENSEARCH_API_SPEC"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SPEC_SUITES],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "error" not in result.stdout.splitlines()[-1]
