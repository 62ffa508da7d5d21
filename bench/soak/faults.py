"""The faults the soak injects, each a function of the running soak that returns what happened to it.

Each returns ``kind``, ``started`` / ``ended`` (monotonic seconds: the fault on, and the dependency back),
``recovery_s`` (dependency back → the first successful request), a ``note`` and its own ``violations``. A
fault this machine or this configuration cannot inject is refused by ``injectable`` with the reason, and the
soak reports it as skipped, never as passed. The faults of the language model and of OpenSearch (their
stand-ins failing) are in ``bench/soak/dependency_faults.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.soak.dependency_faults import DEPENDENCY_FAULTS, dependency_injectable
from bench.soak.outcome import recovered as _recovered
from bench.soak.outcome import result as _result

if TYPE_CHECKING:
    from bench.soak.run import Soak

OUTAGE_S = 8.0
SLOW_S = 5.0


def postgres_down(soak: Soak) -> dict[str, Any]:
    started = time.monotonic()
    soak.cluster.stop()
    time.sleep(OUTAGE_S / 2)
    states = {replica.ready() for replica in soak.replicas}
    time.sleep(OUTAGE_S / 2)
    soak.cluster.start()
    ended = time.monotonic()
    bad = [] if states == {503} else [f"postgres-down: /readyz answered {sorted(states)} while PostgreSQL was down"]
    recovery = _recovered(soak, ended)
    back = [r.ready() for r in soak.replicas]
    if back != [200] * len(back):
        bad.append(f"postgres-down: /readyz {back} after recovery")
    return _result(
        "postgres-down", started, ended, recovery, f"stopped {OUTAGE_S:.0f} s; /readyz {sorted(states)}", bad
    )


def postgres_slow(soak: Soak) -> dict[str, Any]:
    started = time.monotonic()
    soak.cluster.pause()
    time.sleep(SLOW_S)
    soak.cluster.resume()
    ended = time.monotonic()
    return _result(
        "postgres-slow", started, ended, _recovered(soak, ended), f"every process stopped {SLOW_S:.0f} s", []
    )


def replica_kill(soak: Soak) -> dict[str, Any]:
    replica = soak.replicas[-1]
    started = time.monotonic()
    assert replica.process is not None
    replica.process.send_signal(signal.SIGKILL)
    replica.process.wait(timeout=30)
    replica._channel.close()
    replica._serve()
    ended = time.monotonic()
    return _result(
        "replica-kill", started, ended, _recovered(soak, ended, len(soak.replicas) - 1), "SIGKILL, restarted", []
    )


#: Pages of the corpus an interrupted indexing run writes (three chunks each).
PAGES = 160


def _corpus(soak: Soak, pages: int = PAGES) -> Path:
    folder = soak.work / ("extra" if pages == PAGES else f"extra-{pages}")
    if not folder.exists():
        folder.mkdir(parents=True)
        for i in range(pages):
            lines = [f"# Extra page {i}", ""] + [
                f"Paragraph {j} of page {i} describes the extra archive item {i * 100 + j} in plain words."
                for j in range(40)
            ]
            (folder / f"page-{i:02d}.md").write_text("\n".join(lines))
        (folder / "acl.yaml").write_text('documents:\n  - match: "**"\n    allow: [group:everyone]\n')
    return folder


def _chunks(soak: Soak, store: str) -> tuple[int, int]:
    done = soak.docqa("stores", "--json", timeout=120)
    for entry in json.loads(done.stdout or "[]"):
        if entry.get("id") == store:
            return int(entry["documents"]), int(entry["chunks"])
    return 0, 0


def reference_store(pages: int = PAGES) -> str:
    """The store a clean run of the ``pages``-page corpus wrote."""
    return "extra-ref" if pages == PAGES else f"extra-ref-{pages}"


def reference(soak: Soak, pages: int = PAGES) -> tuple[int, int]:
    """(documents, chunks) of a clean run of the ``pages``-page corpus, made once."""
    counts: dict[int, tuple[int, int]] = soak.__dict__.setdefault("reference_counts", {})
    if pages not in counts:
        soak.docqa("index", str(_corpus(soak, pages)), "--store", reference_store(pages), "--quiet", "--no-graph")
        counts[pages] = _chunks(soak, reference_store(pages))
    return counts[pages]


def interrupted_index(
    soak: Soak,
    kind: str,
    store: str,
    during: Callable[[], None],
    after: Callable[[], None],
    running: list[subprocess.Popen[bytes]] | None = None,
    wrap: list[str] = (),  # type: ignore[assignment]
    pages: int = PAGES,
) -> dict[str, Any]:
    """An indexing run of ``store`` (a corpus of ``pages`` pages) broken by ``during`` (a kill, a full or
    read-only disk, bulk replies cut), ``after`` undoing it, then a re-run that must leave exactly the chunks
    of a clean run. ``running`` receives the broken run's process."""
    expected = reference(soak, pages)
    corpus = _corpus(soak, pages)
    started = time.monotonic()
    command = [*wrap, *_docqa(), "index", str(corpus), "--store", store, "--quiet", "--no-graph"]
    env = soak.replicas[0]._env()
    run = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if running is not None:
        running.append(run)
    _writing(soak, store, run)
    during()
    try:
        run.wait(timeout=300)
    except subprocess.TimeoutExpired:
        run.kill()
        run.wait()
    after()
    ended = time.monotonic()
    rerun = soak.docqa("index", str(corpus), "--store", store, "--quiet", "--no-graph")
    got = _chunks(soak, store)
    bad = (
        []
        if got == expected
        else [f"{kind}: after the re-run {store} holds {got} (documents, chunks), a clean run {expected}"]
    )
    if rerun.returncode != 0:
        bad.append(f"{kind}: the re-run failed: {rerun.stderr.strip()[-300:]}")
    note = f"first run exit {run.returncode}; re-run {got[0]} documents, {got[1]} chunks (clean run {expected[1]})"
    return _result(kind, started, ended, _recovered(soak, ended), note, bad)


def _writing(soak: Soak, store: str, run: subprocess.Popen[bytes]) -> None:
    """Wait until the indexing run of ``store`` has stored its first documents (or ended)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(soak.cluster.url)
    try:
        deadline = time.monotonic() + 120
        while run.poll() is None and time.monotonic() < deadline:
            with engine.connect() as db:
                stored = db.execute(text("select count(*) from documents where store_id = :s"), {"s": store}).scalar()
            if stored:
                return
            time.sleep(0.2)
    finally:
        engine.dispose()


def _docqa() -> list[str]:
    from bench.leakage.docqa_target import DOCQA

    return DOCQA


def indexer_kill(soak: Soak) -> dict[str, Any]:
    store = f"extra-kill-{len(soak.injected)}"
    running: list[subprocess.Popen[bytes]] = []

    def kill() -> None:
        running[0].send_signal(signal.SIGKILL)

    return interrupted_index(soak, "indexer-kill", store, kill, lambda: None, running)


def _data_mount(soak: Soak) -> Path:
    return soak.replicas[0].data_dir


def disk_full(soak: Soak) -> dict[str, Any]:
    filler = _data_mount(soak) / "soak-filler"
    store = f"extra-full-{len(soak.injected)}"

    def fill() -> None:
        free = shutil.disk_usage(filler.parent).free
        chunk = b"\0" * (1 << 20)
        # Unbuffered: a buffered file keeps the part of the last write that did not fit and fails again on close.
        with filler.open("wb", buffering=0) as out:
            try:
                for _ in range(free // len(chunk) + 1):
                    out.write(chunk)
            except OSError:  # the disk is full: the fault is on
                pass
        time.sleep(OUTAGE_S)

    return interrupted_index(soak, "disk-full", store, fill, lambda: filler.unlink(missing_ok=True))


def read_only(soak: Soak) -> dict[str, Any]:
    """The data directory read-only under an indexing run: the run sees it through a read-only bind mount of
    its own (a mount namespace), as the servers keep the store's files open for writing and the kernel will not
    remount the filesystem under them."""
    mount = str(_data_mount(soak))
    store = f"extra-ro-{len(soak.injected)}"
    frozen = f'mount --bind {mount} {mount} && mount -o remount,bind,ro {mount} && exec "$@"'
    wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-c", frozen, "sh"]
    return interrupted_index(soak, "read-only", store, lambda: None, lambda: None, wrap=wrap)


FAULTS: dict[str, Callable[[Soak], dict[str, Any]]] = {
    "postgres-down": postgres_down,
    "postgres-slow": postgres_slow,
    "replica-kill": replica_kill,
    "indexer-kill": indexer_kill,
    "disk-full": disk_full,
    "read-only": read_only,
    **DEPENDENCY_FAULTS,
}


def injectable(name: str, soak: Soak) -> tuple[bool, str]:
    """Whether ``name`` can be injected in this soak, and why not."""
    if name == "disk-full" and not getattr(soak, "data_on_tmpfs", False):
        return False, "the data directory is not on a filesystem of the soak's own (mounting a tmpfs needs root)"
    if name == "read-only" and (os.geteuid() != 0 or shutil.which("unshare") is None):
        return False, "a read-only bind mount in a mount namespace of the run's own needs root and unshare(1)"
    return dependency_injectable(name, soak)


def inject(name: str, soak: Soak) -> dict[str, Any]:
    started = time.monotonic()
    try:
        return FAULTS[name](soak)
    except Exception as exc:  # a fault the soak could not carry out is a finding, never a pass
        return _result(name, started, time.monotonic(), 0.0, f"could not be injected: {exc!r}"[:300],
                       [f"{name}: could not be injected ({exc!r})"[:300]])  # fmt: skip
