"""`docqa index --shard i/N`: N real processes, at once, against one embedded store give the store one process
gives (documents, chunks, texts, ACLs, manifest groups), through changes, removals and a SIGKILL mid-shard."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from indexer.ingest.shards import Shard, shard_of
from service.persistence.sql_settings import SqlSettingsRepository

DRIVER = Path(__file__).with_name("kill_driver.py")
STORE = "kill"  # the driver's store

MANIFEST = """groups:
  finance: [user:alice, group:auditors]
  auditors: [user:carol]
documents:
  - match: "finance/**"
    allow: [group:finance]
    deny: [user:mallory]
  - match: "hr/*.md"
    allow: [group:hr]
  - match: "**"
    allow: [group:everyone]
"""


def make_folder(root: Path, documents: int) -> Path:
    root.mkdir()
    (root / "acl.yaml").write_text(MANIFEST)
    for i in range(documents):
        folder = root / ("finance", "hr", "public")[i % 3]
        folder.mkdir(exist_ok=True)
        body = "\n\n".join(f"Paragraph {p} of document {i} talks about topic {i * p}." for p in range(1 + i % 5))
        (folder / f"doc{i:03d}.md").write_text(f"# Document {i}\n\n{body}\n")
    return root


def run(data_dir: Path, folder: Path, *shards: str) -> None:
    """The shards (none: one whole run), all at once, each in its own process."""
    processes = [start(data_dir, folder, shard) for shard in shards or ("",)]
    for process in processes:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err


def start(data_dir: Path, folder: Path, shard: str, delay_s: float = 0.02) -> subprocess.Popen[str]:
    command = [sys.executable, str(DRIVER), str(data_dir), str(folder)] + ([shard] if shard else [])
    env = {**os.environ, "KILL_DRIVER_DELAY_S": str(delay_s)}  # per model call, one document each
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def recorded(data_dir: Path) -> set[str]:
    """The documents the catalog holds now (none before the first run has created it)."""
    try:
        with sqlite3.connect(data_dir / "settings.sqlite", timeout=30) as db:
            return {row[0] for row in db.execute("SELECT id FROM documents WHERE store_id = ?", (STORE,))}
    except sqlite3.OperationalError:
        return set()


def state(data_dir: Path) -> tuple[object, ...]:
    """Everything a run decides: the catalog's documents, the index's rows, the manifest's groups."""
    repo = SqlSettingsRepository.from_url(f"sqlite:///{data_dir / 'settings.sqlite'}")
    documents = sorted(repo.list_documents(STORE), key=lambda d: d.id)
    groups = dict(repo.memberships(STORE))
    repo.close()
    with sqlite3.connect(data_dir / "index" / f"{STORE}.sqlite") as db:
        rows = db.execute(
            "SELECT chunk_id, document_id, ordinal, text, title, heading_path, acl_allow, acl_deny, vector"
            " FROM chunks ORDER BY chunk_id"
        ).fetchall()
    return documents, rows, groups


def test_two_shards_at_once_give_the_store_one_run_gives(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "corpus", 45)
    one, two = tmp_path / "one", tmp_path / "two"
    run(one, folder)
    run(two, folder, "0/2", "1/2")
    expected = state(one)
    documents, rows, _ = expected
    assert len(documents) == 45 and len({r[0] for r in rows}) == len(rows) == sum(d.chunk_count for d in documents)
    assert state(two) == expected

    # Changes: a file edited, two removed, one added, a rule narrowed; both again, shards vs one run.
    (folder / "public" / "doc002.md").write_text("# Document 2\n\nRewritten entirely.\n")
    (folder / "finance" / "doc000.md").unlink()
    (folder / "hr" / "doc001.md").unlink()
    (folder / "public" / "new.md").write_text("# New\n\nA new document.\n")
    (folder / "acl.yaml").write_text(MANIFEST.replace("allow: [group:hr]", "allow: [group:hr, user:dan]"))
    run(one, folder)
    run(two, folder, "1/2", "0/2")
    assert state(two) == state(one)
    ids = [d.id for d in state(two)[0]]  # type: ignore[attr-defined]
    assert "finance/doc000.md" not in ids and "public/new.md" in ids


def test_a_shard_killed_midway_and_run_again_finishes_exactly(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "corpus", 60)
    reference = tmp_path / "reference"
    run(reference, folder)
    expected = state(reference)
    everything = {d.id for d in expected[0]}  # type: ignore[attr-defined]
    theirs = {name for name in everything if shard_of(name, 2) == 1}
    data = tmp_path / "killed"
    survivor = start(data, folder, "0/2")
    for wanted in (3, 6):  # killed twice, each time a few documents into the shard (it resumes in between)
        victim = start(data, folder, "1/2", delay_s=0.2)
        deadline = time.monotonic() + 120
        while len(recorded(data) & theirs) < wanted and victim.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        victim.send_signal(signal.SIGKILL)
        victim.communicate(timeout=60)
    _, err = survivor.communicate(timeout=300)
    assert survivor.returncode == 0, err
    assert 6 <= len(recorded(data) & theirs) < len(theirs), "the kills did not land in the middle of the shard"
    run(data, folder, "1/2")
    assert state(data) == expected


def test_every_file_has_exactly_one_shard_of_any_count() -> None:
    names = [f"folder/doc{i}.md" for i in range(200)]
    for count in (1, 2, 3, 7):
        owners = [[s for s in range(count) if Shard(s, count).owns(name)] for name in names]
        assert all(len(o) == 1 for o in owners)
        if count > 1:
            assert len({o[0] for o in owners}) == count  # every shard gets some
    assert shard_of("a/b.md", 2) == shard_of("a/b.md", 2)
