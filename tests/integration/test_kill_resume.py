"""A real SIGKILL at random points of an indexing run; the re-run finishes the job exactly."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from acl.errors import NotFound
from indexer.index import acl_filter
from indexer.index.embedded.index import EmbeddedIndex
from service.persistence.sql_settings import SqlSettingsRepository

DRIVER = Path(__file__).with_name("kill_driver.py")


def make_folder(root: Path, documents: int) -> Path:
    root.mkdir()
    (root / "acl.yaml").write_text("documents:\n  - match: '**'\n    allow: [group:everyone]\n")
    for i in range(documents):
        body = "\n\n".join(f"Paragraph {p} of document {i} talks about topic {i * p}." for p in range(6))
        (root / f"doc{i:03d}.md").write_text(f"# Document {i}\n\n{body}\n")
    return root


def start(data_dir: Path, folder: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(DRIVER), str(data_dir), str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def state(data_dir: Path) -> tuple[list[str], list[str]]:
    index = EmbeddedIndex(data_dir / "index")
    hits = index.exact("kill", np.eye(1, 64, dtype=np.float32)[0], 100_000, acl_filter(["group:everyone"]))
    chunk_ids = sorted(h.chunk.chunk_id for h in hits)
    index.close()
    repo = SqlSettingsRepository.from_url(f"sqlite:///{data_dir / 'settings.sqlite'}")
    documents = sorted(d.id for d in repo.list_documents("kill"))
    repo.close()
    return chunk_ids, documents


def test_sigkill_anywhere_then_rerun_gives_the_same_index(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "corpus", 60)
    reference = tmp_path / "reference"
    done = start(reference, folder)
    _, err = done.communicate(timeout=300)
    assert done.returncode == 0, err
    expected = state(reference)
    assert len(expected[1]) == 60 and len(expected[0]) == len(set(expected[0]))

    rng = random.Random(11)
    partial = 0
    for attempt in range(3):
        data = tmp_path / f"killed{attempt}"
        for _ in range(3):  # killed several times in a row, at random points
            process = start(data, folder)
            time.sleep(rng.uniform(0.3, 2.5))
            process.send_signal(signal.SIGKILL)
            process.communicate(timeout=60)
            with contextlib.suppress(NotFound):  # killed before the store existed
                partial += 0 < len(state(data)[1]) < 60
        finish = start(data, folder)
        _, err = finish.communicate(timeout=300)
        assert finish.returncode == 0, err
        assert state(data) == expected
        assert os.path.exists(data / "settings.sqlite")
    assert partial, "no kill landed in the middle of a run: the test proved nothing"
