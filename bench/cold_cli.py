"""A cold CLI: wall time of whole ``docqa`` processes, each a fresh interpreter, next to baselines of the same run.

Indexes the Acme sample corpus into a temporary data directory, starts a ``docqa serve`` on it (warmed up:
its model loaded), then times ``--runs`` runs of each command, alternating them so that a busy machine
weighs on all alike:

- ``python -c pass``: the interpreter alone (the floor);
- ``docqa --help``: the CLI's own imports;
- ``docqa ask ... --no-llm``: the local path, cold (settings, index, the embedding model loaded in-process);
- ``docqa ask ... --no-llm --server URL``: the same question asked of the running server.

    python bench/cold_cli.py --runs 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from provenance import record  # bench/provenance.py (bench/ is on sys.path when run as a script)

ROOT = Path(__file__).resolve().parents[1]
DOCQA = [sys.executable, "-m", "service.api.cli"]
QUESTION = "How many vacation days do I get?"


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCQA_")}
    return {**env, "DOCQA_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    result = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({result.returncode}): {result.stderr}")
    return elapsed


def _serve(data_dir: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    process = subprocess.Popen(
        [*DOCQA, "serve", "--http-port", str(port), "--grpc-port", str(_free_port())],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=2):
                return process, url
        except OSError:
            time.sleep(0.25)
    process.kill()
    raise SystemExit("docqa serve did not start within 120 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each command (default 5)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        corpus = Path(tmp) / "acme"
        shutil.copytree(ROOT / "examples" / "acme", corpus)
        env = _env(data_dir)
        _timed([*DOCQA, "index", str(corpus), "--store", "acme", "--quiet"], env)
        process, url = _serve(data_dir, env)
        try:
            ask = [*DOCQA, "ask", QUESTION, "--store", "acme", "--as", "bob", "--no-llm"]
            commands = {
                "python -c pass": [sys.executable, "-c", "pass"],
                "docqa --help": [*DOCQA, "--help"],
                "docqa ask (local, cold)": ask,
                "docqa ask --server": [*ask, "--server", url],
            }
            _timed(commands["docqa ask --server"], env)  # the server loads its model once, here
            times: dict[str, list[float]] = {name: [] for name in commands}
            for _ in range(args.runs):
                for name, command in commands.items():
                    times[name].append(_timed(command, env))
        finally:
            process.terminate()
            process.wait(timeout=15)
    floor = statistics.median(times["python -c pass"])
    local = statistics.median(times["docqa ask (local, cold)"])
    print(f"cold CLI, {args.runs} runs each, median / min wall seconds; load average {os.getloadavg()[0]:.1f}")
    print(f"{'command':<26} {'median s':>9} {'min s':>7} {'x python':>9} {'x local ask':>12}")
    figures = {}
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:<26} {median:9.2f} {min(samples):7.2f} {median / floor:8.1f}x {median / local:11.2f}x")
        figures[name] = {"median_s": median, "min_s": min(samples), "x_python": median / floor}
    record("cold_cli", {"runs": args.runs, **figures})


if __name__ == "__main__":
    main()
