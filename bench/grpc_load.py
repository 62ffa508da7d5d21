"""Bounded load test: retrieval-only VectorQuery over gRPC on loopback.

A fixed number of concurrent clients send requests for a fixed time, then the
run stops by itself and prints throughput and p50/p99 latency. Uses the fake
embedder (no model load) so the figure is the server path: auth, audit,
filter, search, access check, threshold, serialization.

    python bench/grpc_load.py --concurrency 8 --seconds 10 --documents 200
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc

from acl.model import Acl
from service.auth import mint_token
from service.bootstrap import build_app
from service.config import Settings
from service.grpc_server import services_for, start_grpc
from service.grpc_stubs import load
from service.metrics import Metrics

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for tests.fakes_service
from tests.fakes_service import FakeEmbedder

TOPICS = ["vacation", "parking", "salary", "travel", "security", "laptop", "benefits", "training"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--documents", type=int, default=200)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp), auth={"hs256_secret": "bench-secret-" + "0" * 64})
        app = build_app(settings, embedder_factory=lambda _: FakeEmbedder())
        ingestor = app.ingestor("bench")
        for i in range(args.documents):
            topic = TOPICS[i % len(TOPICS)]
            text = f"Policy {i} about {topic}: the {topic} rules say item {i} applies to group {i % 10}."
            ingestor.upsert_bytes(f"doc-{i}", text.encode(), "text/plain", acl=Acl.of([f"group:g{i % 10}"]))
        app.repository.add_member("group:g3", "user:bench")
        server = start_grpc(services_for(app, Metrics()), "127.0.0.1", 0)
        stubs = load()
        token = mint_token(settings, "bench", ttl_s=3600)
        metadata = (("authorization", f"Bearer {token}"),)
        latencies: list[float] = []
        errors = 0
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
                    except grpc.RpcError:
                        failed += 1
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

    latencies.sort()
    p = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else latencies * 99
    print(
        f"retrieval-only VectorQuery over gRPC: {args.concurrency} clients, {elapsed:.1f} s, {args.documents} documents"
    )
    print(f"requests {len(latencies)}  errors {errors}  throughput {len(latencies) / elapsed:.1f} req/s")
    print(f"latency p50 {p[49] * 1000:.2f} ms  p99 {p[98] * 1000:.2f} ms")


if __name__ == "__main__":
    main()
