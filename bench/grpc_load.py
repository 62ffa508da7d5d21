"""Bounded load test: retrieval-only VectorQuery over gRPC on loopback.

A fixed number of concurrent clients send requests for a fixed time, then the
run stops by itself and prints throughput and p50/p99 latency. Uses the fake
embedder (no model load) so the figure is the server path: auth, audit,
filter, search, access check, threshold, serialization.

Baselines in the same run, same questions, one thread, no gRPC: the engine
alone, and the audited path (engine + audit row). The gRPC p50/p99 are also
given as ratios to the engine alone. Every audit row written during the load is
timed (the repository's ``record_audit`` wrapped here), to show how much of the
tail is that write.

    python bench/grpc_load.py --concurrency 8 --seconds 10 --documents 200
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
from figures import percentiles  # bench/figures.py
from provenance import record  # bench/provenance.py

from acl.model import Acl
from service.api.grpc.server import services_for, start_grpc
from service.api.grpc.stubs import load
from service.bootstrap import build_app
from service.config import Settings
from service.domain.queries import VectorQuery
from service.observability.metrics import Metrics
from service.security.tokens import Identity, mint_token

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for tests.fakes_service
from tests.fakes_service import FakeEmbedder

TOPICS = ["vacation", "parking", "salary", "travel", "security", "laptop", "benefits", "training"]


def request(i: int) -> VectorQuery:
    return VectorQuery("bench", f"{TOPICS[i % len(TOPICS)]} rules", 0.0, 10, perform_llm_query=False)


def percentiles_ms(samples: list[float]) -> tuple[float, float]:
    """p50 and p99 of ``samples`` (seconds) in milliseconds."""
    p50, p99 = percentiles(samples)
    return p50 * 1000, p99 * 1000


def one_thread(call: Callable[[int], object], seconds: float) -> list[float]:
    """Latencies of ``call(i)`` in a loop for ``seconds`` (after 20 warm-up calls)."""
    for i in range(20):
        call(i)
    out: list[float] = []
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        started = time.perf_counter()
        call(i)
        out.append(time.perf_counter() - started)
        i += 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--baseline-s", type=float, default=3.0, help="seconds of each in-process baseline")
    args = parser.parse_args()
    if args.concurrency < 1 or args.documents < 1 or args.seconds <= 0 or args.baseline_s <= 0:
        parser.error("--concurrency and --documents must be at least 1, --seconds and --baseline-s positive")

    with tempfile.TemporaryDirectory() as tmp:
        auth = {"hs256_secret": "bench-secret-" + "0" * 64, "issuer": "docqa-bench", "audience": "docqa"}
        settings = Settings(data_dir=Path(tmp), auth=auth)
        app = build_app(settings, embedder_factory=lambda _: FakeEmbedder())
        ingestor = app.ingestor("bench")
        for i in range(args.documents):
            topic = TOPICS[i % len(TOPICS)]
            text = f"Policy {i} about {topic}: the {topic} rules say item {i} applies to group {i % 10}."
            ingestor.upsert_bytes(f"doc-{i}", text.encode(), "text/plain", acl=Acl.of([f"group:g{i % 10}"]))
        app.admin_without_index().add_member("group:g3", "user:bench", "bench")
        services = services_for(app, Metrics())
        engine_alone = one_thread(lambda i: app.engine.ask(Identity("bench").caller(), request(i)), args.baseline_s)
        audited = one_thread(lambda i: services.queries.ask(Identity("bench"), request(i), "bench"), args.baseline_s)
        audit_ms: list[float] = []
        record_audit = app.repository.record_audit

        def timed_record(entry: Any, history: Any = ()) -> None:
            started = time.perf_counter()
            record_audit(entry, history=history)
            audit_ms.append(time.perf_counter() - started)

        app.repository.record_audit = timed_record  # type: ignore[method-assign]
        server = start_grpc(services, "127.0.0.1", 0)
        stubs = load()
        token = mint_token(settings, "bench", ttl_s=3600)
        metadata = (("authorization", f"Bearer {token}"),)
        latencies: list[float] = []
        errors = 0
        first_error: list[str] = []
        lock = threading.Lock()
        deadline = time.monotonic() + args.seconds

        def client(n: int) -> None:
            nonlocal errors
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                stub = stubs.query_grpc.QueryServiceStub(channel)
                mine: list[float] = []
                failed = 0
                i = n
                while time.monotonic() < deadline:
                    request = stubs.query.VectorQueryRequest(
                        store_id="bench",
                        question=f"{TOPICS[i % len(TOPICS)]} rules",
                        level=0.0,
                        max_chunks=10,
                        perform_llm_query=False,
                    )
                    started = time.perf_counter()
                    try:
                        stub.VectorQuery(request, metadata=metadata, timeout=10)
                    except grpc.RpcError as exc:
                        failed += 1
                        if not first_error:
                            first_error.append(f"{exc.code().name}: {exc.details()}")  # type: ignore[attr-defined]
                    mine.append(time.perf_counter() - started)
                    i += 1
            with lock:
                latencies.extend(mine)
                errors += failed

        threads = [threading.Thread(target=client, args=(n,)) for n in range(args.concurrency)]
        began = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - began
        server.stop(0)
        app.close()

    base50, base99 = percentiles_ms(engine_alone)
    aud50, aud99 = percentiles_ms(audited)
    p50, p99 = percentiles_ms(latencies)
    w50, w99 = percentiles_ms(audit_ms)
    print(
        f"retrieval-only VectorQuery over gRPC: {args.concurrency} clients, {elapsed:.1f} s, {args.documents} documents"
    )
    print(f"requests {len(latencies)}  errors {errors}  throughput {len(latencies) / elapsed:.1f} req/s")
    print(f"{'path':<34} {'p50 ms':>8} {'p99 ms':>8} {'x engine p50':>13}")
    print(f"{'engine in-process, 1 thread':<34} {base50:8.2f} {base99:8.2f} {1.0:12.1f}x")
    print(f"{'engine + audit row, 1 thread':<34} {aud50:8.2f} {aud99:8.2f} {aud50 / base50:12.1f}x")
    print(f"{f'gRPC, {args.concurrency} clients':<34} {p50:8.2f} {p99:8.2f} {p50 / base50:12.1f}x")
    print(f"{'audit row write under the load':<34} {w50:8.2f} {w99:8.2f} {w50 / base50:12.1f}x")
    if errors:  # the latencies above would time failures, not the server path
        raise SystemExit(f"{errors} of {len(latencies)} requests failed, the first with {first_error[0]}")
    record(
        "grpc_load",
        {
            "concurrency": args.concurrency,
            "seconds": elapsed,
            "documents": args.documents,
            "requests": len(latencies),
            "errors": errors,
            "requests_per_s": len(latencies) / elapsed,
            "engine_alone": {"p50_ms": base50, "p99_ms": base99},
            "engine_and_audit": {"p50_ms": aud50, "p99_ms": aud99},
            "grpc": {"p50_ms": p50, "p99_ms": p99, "x_engine_p50": p50 / base50},
            "audit_write_under_load": {"p50_ms": w50, "p99_ms": w99},
        },
    )


if __name__ == "__main__":
    main()
