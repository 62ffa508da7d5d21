"""Which commit, machine and date a benchmark's figures were measured on, kept with the figures.

A script calls ``record(name, figures)`` once its figures are known: it prints one ``provenance:`` line
(commit, cores, load average, CPU model, date) next to them and appends one JSON line, the figures with
their provenance, to ``bench/results/<name>.jsonl`` (git-ignored; ``DOCQA_BENCH_RESULTS`` moves the folder).
So a figure quoted in docs/performance.md can be traced to the tree and the machine that produced it.

Works both as ``from provenance import record`` (a script run as ``python bench/x.py``, with bench/ on
``sys.path``) and as ``from bench.provenance import record`` (``python -m bench.x``). Standard library only.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS_ENV = "DOCQA_BENCH_RESULTS"


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            # --no-optional-locks: never refresh the index of a checkout someone else is using
            ["git", "--no-optional-locks", "-C", str(ROOT), *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def commit() -> str:
    """``git rev-parse HEAD`` of the repository, ``+dirty`` when tracked files differ from it; ``unknown``
    outside a git checkout."""
    head = _git("rev-parse", "HEAD")
    if not head:
        return "unknown"
    changed = _git("status", "--porcelain", "--untracked-files=no")
    return head + ("+dirty" if changed else "")


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux), else what ``platform`` says."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def machine() -> dict[str, Any]:
    """Cores (all, and those this process may use), load average, CPU model, OS and Python."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 0
    try:
        load = [round(value, 2) for value in os.getloadavg()]
    except (AttributeError, OSError):
        load = []
    return {
        "cores": os.cpu_count() or 0,
        "usable_cores": usable,
        "load_average": load,
        "cpu_model": cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def provenance() -> dict[str, Any]:
    """The commit, the machine and the date (UTC, ISO 8601) of a measurement made now."""
    return {
        "commit": commit(),
        "machine": machine(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def line(found: Mapping[str, Any]) -> str:
    """``found`` (a ``provenance()``) as the one line a script prints beside its figures."""
    host = found["machine"]
    load = " ".join(f"{value:.2f}" for value in host["load_average"]) or "n/a"
    return (
        f"provenance: commit {found['commit']} · {host['usable_cores']}/{host['cores']} cores"
        f" · load {load} · {host['cpu_model']} · {found['date']}"
    )


def results_dir() -> Path:
    """Where the JSON lines go: ``$DOCQA_BENCH_RESULTS``, else ``bench/results``."""
    return Path(os.environ.get(RESULTS_ENV) or ROOT / "bench" / "results")


def record(script: str, figures: Mapping[str, Any], *, argv: list[str] | None = None, quiet: bool = False) -> Path:
    """Print the provenance line and append ``{"script", "argv", "provenance", "figures"}`` as one JSON line to
    ``<results_dir>/<script>.jsonl``; returns that file. ``figures`` must be JSON-serialisable (others are
    written with ``str``)."""
    found = provenance()
    if not quiet:
        print(line(found), flush=True)
    entry = {
        "script": script,
        "argv": list(sys.argv[1:] if argv is None else argv),
        "provenance": found,
        "figures": dict(figures),
    }
    folder = results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{script}.jsonl"
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(entry, default=str, sort_keys=True) + "\n")
    return path
