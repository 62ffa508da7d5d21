"""Server CPU per question: the server process's CPU time (every thread, from /proc) over N GraphQL or gRPC
questions, for this tree and, with ``--baseline DIR``, another tree (a ``git archive`` of an older commit) served
from the same store, alternated round by round so both see the same machine.

Each question is ``bench/concurrency.py``'s: 10 chunks with their text, level 0, no LLM, the question embedded by
the real model. The server runs in its own process, as ``docqa serve`` would, over ``bench/concurrency.py``'s
store (``--chunks``, low-rank vectors; built in ``--data-dir`` once: 142 s at 100k here); the clients are threads
of this process. With ``--profile FILE`` py-spy records the server of this tree during its last round and FILE
gets a top-N table (self and inclusive samples per function; idle threads left out).

    git archive REF | tar -x -C /tmp/base && cp bench/server_cpu.py /tmp/base/bench/   # a baseline tree
    python bench/server_cpu.py --chunks 100000 --seconds 10 --rounds 3 [--baseline /tmp/base] [--profile top.txt]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from concurrency import MODES, STORE, build_store, clients  # noqa: E402  (bench/concurrency.py)
from figures import percentiles  # noqa: E402  (bench/figures.py)
from provenance import record  # noqa: E402  (bench/provenance.py)

TICKS = os.sysconf("SC_CLK_TCK")


def serve(data_dir: Path, lexicon_max_postings: int) -> None:
    """In the server process: serve the store on both transports, print the addresses and a token, wait for EOF."""
    from concurrency import start_servers

    app, grpc_server, http_server, addresses, token = start_servers(data_dir, "memory", lexicon_max_postings)
    print(json.dumps({**addresses, "token": token}), flush=True)
    # Ready once the first questions (the parent's warm-up) read the full-text index into memory and the graph
    # (a store too small for a graph is searched exactly: 60 s at most for that; a store over the lexicon's
    # budget keeps BM25 in FTS5, as docqa serve would: 300 s at most for that).
    stats, began = app.index.stats, time.monotonic()  # type: ignore[attr-defined]
    while not (
        (stats(STORE).lexicon_reads or time.monotonic() - began > 300)
        and (stats(STORE).graph_rows or time.monotonic() - began > 60)
    ):
        time.sleep(0.1)
    print(f"lexicon pairs in memory: {stats(STORE).lexicon_pairs}", file=sys.stderr, flush=True)
    time.sleep(2.0)  # the copy's last steps after it is counted
    print("ready", flush=True)
    sys.stdin.read()
    http_server.stop()
    grpc_server.stop(0)
    app.close()


def threads(pid: int) -> dict[str, float]:
    """CPU seconds per thread name (``comm``) of ``pid``, the threads of one name summed."""
    out: dict[str, float] = collections.defaultdict(float)
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name, rest = task.joinpath("stat").read_text().rsplit(")", 1)
        except OSError:
            continue
        fields = rest.split()
        out[name.split("(", 1)[1]] += (int(fields[11]) + int(fields[12])) / TICKS
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of every thread of ``pid``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


class Server:
    """A server process of the tree at ``tree``."""

    def __init__(self, tree: Path, data_dir: Path, lexicon_max_postings: int) -> None:
        env = {**os.environ, "PYTHONPATH": f"{tree}:{tree / 'bench'}"}
        code = (
            f"import sys, pathlib; sys.path[:0] = [{str(tree)!r}, {str(tree / 'bench')!r}]; import server_cpu; "
            f"server_cpu.serve(pathlib.Path({str(data_dir)!r}), {lexicon_max_postings})"
        )
        self.process = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True, cwd=tree
        )
        assert self.process.stdout is not None
        self.started = time.monotonic()
        self.info = json.loads(self.process.stdout.readline())

    def wait_ready(self) -> None:
        """Send warm-up questions until the server says it has its in-memory indexes."""
        import queue
        import threading

        assert self.process.stdout is not None
        ready = threading.Event()
        threading.Thread(target=lambda: (self.process.stdout.readline(), ready.set()), daemon=True).start()  # type: ignore[union-attr]
        out: queue.Queue[Any] = queue.Queue()
        while not ready.is_set():
            clients("graphql", self.info["graphql"], self.info["token"], 2, 1.0, out)
            out.get()
        self.ready_s = time.monotonic() - self.started

    def memory_mb(self) -> dict[str, float]:
        """The server's resident memory now and at its peak (VmRSS, VmHWM), in MB."""
        status = Path(f"/proc/{self.process.pid}/status").read_text().splitlines()
        fields = dict(line.split(":", 1) for line in status if ":" in line)
        return {key: int(fields[key].split()[0]) / 1024 for key in ("VmRSS", "VmHWM")}

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=120)


def questions(server: Server, transport: str, count: int, seconds: float) -> dict[str, float]:
    """Run ``count`` clients in this process for ``seconds``; the server's CPU ms per question."""
    import queue

    pid = server.process.pid
    out: queue.Queue[Any] = queue.Queue()
    before = threads(pid)
    began_cpu, began = cpu_seconds(pid), time.monotonic()
    clients(transport, server.info[transport], server.info["token"], count, seconds, out)
    latencies, errors, chunks, _ = out.get()
    used = cpu_seconds(pid) - began_cpu
    done = max(len(latencies), 1)
    p50, p99 = percentiles(latencies)
    after = threads(pid)
    per_thread = {k: (after[k] - before.get(k, 0.0)) * 1000 / done for k in after}
    print(
        "    server CPU ms/question by thread name: "
        + ", ".join(f"{k} {v:.2f}" for k, v in sorted(per_thread.items(), key=lambda kv: -kv[1]) if v >= 0.05)
    )
    return {
        "questions": len(latencies),
        "errors": errors,
        "chunks": chunks / done,
        "server_cpu_ms": used * 1000 / done,
        "rps": len(latencies) / (time.monotonic() - began),
        "p50_ms": p50 * 1000,
        "p99_ms": p99 * 1000,
    }


def top_table(raw: Path, out: Path, n: int = 30) -> None:
    """``out``: the functions with the most samples in py-spy's collapsed stacks ``raw``, self and inclusive."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for row in raw.read_text().splitlines():
        stack, _, count = row.rpartition(" ")
        frames = [f for f in stack.split(";") if f]
        if not frames or not count.isdigit():
            continue
        samples = int(count)
        total += samples
        names = [f.split(" (")[0] + " (" + f.split(" (")[-1].split(":")[0].rsplit("/", 2)[-1] + ")" for f in frames]
        own[names[-1]] += samples
        for name in set(names):
            inclusive[name] += samples
    lines = [f"py-spy samples: {total} (idle threads excluded)", "", "self % | function"]
    lines += [f"{100 * c / total:6.1f} | {name}" for name, c in own.most_common(n)]
    lines += ["", "inclusive % | function"]
    lines += [f"{100 * c / total:6.1f} | {name}" for name, c in inclusive.most_common(n)]
    out.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100000, help="chunks in the store (default 100000)")
    parser.add_argument(
        "--data-dir", type=Path, default=Path("/tmp/docqa-bench-server-cpu"), help="kept between runs (the store)"
    )
    parser.add_argument("--seconds", type=float, default=15.0, help="seconds per measurement (default 15)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, alternating the trees (default 3)")
    parser.add_argument("--clients", default="1,16", help="client counts (default 1,16)")
    parser.add_argument("--transports", default="graphql,grpc", help="default graphql,grpc")
    parser.add_argument(
        "--lexicon-max-postings",
        type=int,
        default=MODES["memory"],
        help=f"index.lexicon_max_postings of the servers (default {MODES['memory']}, docqa serve's; a larger "
        "store keeps BM25 in FTS5 unless raised)",
    )
    parser.add_argument("--baseline", type=Path, help="another tree (e.g. git archive REF | tar -x -C DIR)")
    parser.add_argument("--profile", type=Path, help="py-spy this tree's server in the last round; a top-N table here")
    args = parser.parse_args()
    started = time.monotonic()
    chunks = build_store(args.data_dir, args.chunks, "low-rank")
    disk = sum(f.stat().st_size for f in args.data_dir.rglob("*") if f.is_file()) / 1e6
    print(
        f"store {STORE}: {chunks} chunks (ready in {time.monotonic() - started:.0f} s), {disk:.0f} MB on disk",
        flush=True,
    )
    trees = {"this": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    levels = [int(c) for c in args.clients.split(",")]
    transports = args.transports.split(",")
    rows: dict[str, list[dict[str, float]]] = collections.defaultdict(list)
    for round_ in range(args.rounds):
        for name, tree in trees.items() if round_ % 2 == 0 else reversed(trees.items()):
            server = Server(tree, args.data_dir, args.lexicon_max_postings)
            spy = None
            try:
                server.wait_ready()
                print(f"server of {name}: started and warm in {server.ready_s:.1f} s", flush=True)
                for transport in transports:
                    clients_warm(server, transport)
                if args.profile and name == "this" and round_ == args.rounds - 1:
                    raw = args.profile.with_suffix(".raw")
                    spy_args = ["record", "--pid", str(server.process.pid), "--format", "raw", "--nonblocking"]
                    spy = subprocess.Popen(
                        [str(Path(sys.executable).parent / "py-spy"), *spy_args, "--rate", "200", "-o", str(raw)],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                    time.sleep(1.0)
                for transport in transports:
                    for count in levels:
                        row = questions(server, transport, count, args.seconds)
                        rows[f"{name}/{transport}/{count}"].append(row)
                        print(
                            f"round {round_} {name:<8} {transport:<8} {count:>3} clients: "
                            f"{row['server_cpu_ms']:6.2f} ms server CPU/question over {row['questions']} "
                            f"({row['rps']:.1f} req/s, p50 {row['p50_ms']:.1f} ms, p99 {row['p99_ms']:.1f} ms, "
                            f"{row['chunks']:.1f} chunks, {row['errors']} errors)",
                            flush=True,
                        )
                memory = server.memory_mb()
                print(f"server of {name}: resident {memory['VmRSS']:.0f} MB, peak {memory['VmHWM']:.0f} MB", flush=True)
            finally:
                if spy is not None:
                    spy.send_signal(2)
                    spy.wait(timeout=60)
                server.close()
            if spy is not None:
                top_table(args.profile.with_suffix(".raw"), args.profile)
    print()
    medians: dict[str, float] = {}
    for key, runs in sorted(rows.items()):
        values = sorted(r["server_cpu_ms"] for r in runs)
        medians[key] = values[len(values) // 2]
        print(
            f"{key:<28} server CPU ms/question, median of {len(values)}: {medians[key]:6.2f}  (all: "
            + ", ".join(f"{v:.2f}" for v in values)
            + ")"
        )
    if args.baseline:
        for transport in transports:
            for count in levels:
                this, base = medians[f"this/{transport}/{count}"], medians[f"baseline/{transport}/{count}"]
                print(f"{transport} {count} clients: this ÷ baseline = {this / base:.2f}")
    record("server_cpu", {"chunks": chunks, "rows": rows, "medians": medians})


def clients_warm(server: Server, transport: str) -> None:
    """A few questions before measuring: the graph, the lexicon, the connections."""
    import queue

    out: queue.Queue[Any] = queue.Queue()
    clients(transport, server.info[transport], server.info["token"], 4, 3.0, out)
    out.get()


if __name__ == "__main__":
    main()
