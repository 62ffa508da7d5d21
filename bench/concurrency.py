"""Concurrent clients: retrieval-only questions over gRPC and GraphQL, BM25 in SQLite's FTS5 vs from memory.

Each question asks for its 10 best chunks with their text and gets them (``GRAPHQL``: level 0, so the synthetic
store's chunks pass the threshold), reranked by the default reranker, as a search client's would; the chunks per
answer are printed beside each figure.

A store of ``--chunks`` chunks (synthetic 384-d vectors: indexed with a hashing fake embedder under the
packaged model's name) is served in-process by the real servers, and every question is embedded by the
real all-MiniLM-L6-v2 (the configured backend, ONNX by default). Clients run in a separate process (threads,
one connection each) so they do not share the server's interpreter. For 1, 4, 16 and 64 clients, each for
``--seconds``, it prints req/s and p50/p99 latency, per transport, for the server as ``docqa serve`` runs it
(``query_batching`` on) with BM25 ranked by FTS5 (the baseline: ``index.lexicon_max_postings: 0``) and from the
in-memory copy of the full-text index (the default), then throughput at 16 clients ÷ 1 client for each.

    python bench/concurrency.py --chunks 20000 --seconds 4
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from figures import percentiles  # noqa: E402  (bench/figures.py)
from provenance import record  # noqa: E402  (bench/provenance.py)

STORE = "bench"
AUTH = {"hs256_secret": "bench-secret-" + "0" * 64, "issuer": "docqa-bench", "audience": "docqa"}
TOPICS = ["vacation", "parking", "salary", "travel", "security", "laptop", "benefits", "training"]
QUESTIONS = [
    f"{what} {topic}?"
    for topic in TOPICS
    for what in ("What are the rules for", "Who approves", "How do I request", "What is the budget for")
]
#: What a client of the search asks: the scored chunks with their text. Level 0 (the store's lowest threshold, cosine
#: 0.10): the synthetic store's cosines to a real question are 0.11-0.19, so each answer has its 10 chunks, chosen
#: by the reranker from the 30 fused candidates, as a real question's would be. (At the store's level 0.5 every
#: chunk fell under the threshold: the answers were empty and skipped the reranking and the chunks' transfer.)
GRAPHQL = (
    'query Q($q: String!) { vectorQuery(storeId: "bench", question: $q, level: 0, maxChunks: 10, '
    "performLlmQuery: false) { queryId chunks { chunkId documentId title text score relevance } } }"
)
LEVEL = 0.0


def settings(data_dir: Path) -> Any:
    from service.config import Settings

    return Settings(data_dir=data_dir, auth=AUTH)


def low_rank(fake: Any, rank: int = 24) -> Any:
    """``fake`` with vectors of a low intrinsic dimension, as real text embeddings have: each text's hashed
    words plus a point of a ``rank``-dimensional space seeded by the text, mapped into the embedding's space.
    (The hashed words alone give formulaic chunks near-identical vectors, on which no HNSW graph keeps its
    recall target, so every question then searches exactly.)"""
    import hashlib

    import numpy as np

    basis = np.random.default_rng(20).standard_normal((rank, fake.dimension)).astype(np.float32)
    words = fake.embed_documents

    def embed_documents(texts: Any) -> Any:
        out = words(texts)
        for row, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            out[row] = 0.5 * out[row] + np.random.default_rng(seed).standard_normal(rank).astype(np.float32) @ basis
            out[row] /= np.linalg.norm(out[row])
        return out

    fake.embed_documents = embed_documents
    return fake


def build_store(data_dir: Path, chunks: int, vectors: str = "hashed") -> int:
    """The store (reused when it holds enough chunks already); its chunk count. ``vectors``: "hashed" (the
    fake's hashed words) or "low-rank" (``low_rank``; the HNSW graph is then built and saved, as ``docqa index``
    does)."""
    from acl.model import Acl
    from service.bootstrap import build_app
    from tests.fakes_service import FakeEmbedder

    fake = FakeEmbedder(dimension=384, max_tokens=64, model_name="all-MiniLM-L6-v2")
    if vectors == "low-rank":
        fake = low_rank(fake)
    app = build_app(settings(data_dir), embedder_factory=lambda _: fake)
    from service.access.store_summaries import ADMIN, StoreSummaries

    have = sum(s.chunks for s in StoreSummaries(app.repository).list(ADMIN) if s.store.id == STORE)
    if have >= chunks:
        app.close()
        return have
    ingestor = app.ingestor(STORE)
    made, i = have, 0
    while made < chunks:
        topic = TOPICS[i % len(TOPICS)]
        text = "\n\n".join(
            f"Section {j} of policy {i} on {topic}: the {topic} rule {j} applies to team {i % 10} and to "
            f"requests of type {j % 7}, approved by the {topic} office within {j + 2} days, budget line {i * j}."
            for j in range(20)
        )
        report = ingestor.upsert_bytes(f"doc-{i}.md", text.encode(), "text/markdown", acl=Acl.of(["group:everyone"]))
        made += report.chunks
        i += 1
    if vectors == "low-rank":
        app.index.prepare(STORE)  # type: ignore[attr-defined]
    app.close()
    return made


def clients(transport: str, address: str, token: str, count: int, seconds: float, out: Any) -> None:
    """Run ``count`` client threads for ``seconds`` (in the client process); put (latencies, errors) on ``out``."""
    latencies: list[float] = []
    errors = chunks = 0
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def grpc_client(n: int) -> tuple[list[float], int, int]:
        import grpc

        from service.api.grpc.stubs import load

        stubs = load()
        mine: list[float] = []
        failed = returned = 0
        with grpc.insecure_channel(address) as channel:
            stub = stubs.query_grpc.QueryServiceStub(channel)
            i = n
            while time.monotonic() < deadline:
                request = stubs.query.VectorQueryRequest(
                    store_id=STORE,
                    question=QUESTIONS[i % len(QUESTIONS)],
                    level=LEVEL,
                    max_chunks=10,
                    perform_llm_query=False,
                )
                started = time.perf_counter()
                try:
                    reply = stub.VectorQuery(request, metadata=(("authorization", f"Bearer {token}"),), timeout=30)
                    returned += len(reply.chunks)
                except grpc.RpcError:
                    failed += 1
                mine.append(time.perf_counter() - started)
                i += 1
        return mine, failed, returned

    def graphql_client(n: int) -> tuple[list[float], int, int]:
        host, port = address.rsplit(":", 1)
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        mine: list[float] = []
        failed = returned = 0
        i = n
        while time.monotonic() < deadline:
            body = json.dumps({"query": GRAPHQL, "variables": {"q": QUESTIONS[i % len(QUESTIONS)]}})
            started = time.perf_counter()
            try:
                connection.request("POST", "/graphql", body, headers)
                reply = connection.getresponse()
                payload = json.loads(reply.read())
                failed += bool(reply.status != 200 or payload.get("errors"))
                returned += len(((payload.get("data") or {}).get("vectorQuery") or {}).get("chunks") or ())
            except (OSError, http.client.HTTPException, ValueError):
                failed += 1
                connection.close()
                connection = http.client.HTTPConnection(host, int(port), timeout=30)
            mine.append(time.perf_counter() - started)
            i += 1
        connection.close()
        return mine, failed, returned

    def run(n: int) -> None:
        nonlocal errors, chunks
        mine, failed, returned = (grpc_client if transport == "grpc" else graphql_client)(n)
        with lock:
            latencies.extend(mine)
            errors += failed
            chunks += returned

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    cpu = time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out.put((latencies, errors, chunks, time.process_time() - cpu))


def measure(transport: str, address: str, token: str, count: int, seconds: float) -> dict[str, float]:
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    process = context.Process(target=clients, args=(transport, address, token, count, seconds, out))
    began = time.monotonic()
    server_cpu = time.process_time()  # this process is the server's: it only waits for the clients here
    process.start()
    latencies, errors, chunks, client_cpu = out.get(timeout=seconds + 120)
    server_cpu = time.process_time() - server_cpu
    process.join(timeout=30)
    elapsed = time.monotonic() - began
    p50, p99 = percentiles(latencies)
    done = max(len(latencies), 1)
    # Throughput over the clients' own window: requests ÷ seconds (the process start is not counted).
    return {
        "rps": len(latencies) / seconds,
        "p50": p50 * 1000,
        "p99": p99 * 1000,
        "errors": errors,
        "chunks": chunks / done,  # per answer
        "wall": elapsed,
        # CPU per request, in ms, of every thread of the server and of the client process: on a machine of
        # C cores no level of concurrency serves more than C × 1000 ÷ (server + client) requests a second.
        "server_cpu": server_cpu * 1000 / done,
        "client_cpu": client_cpu * 1000 / done,
    }


MODES = {"fts5": 0, "memory": 25_000_000}  # index.lexicon_max_postings


def start_servers(
    data_dir: Path, mode: str, lexicon_max_postings: int | None = None
) -> tuple[Any, Any, Any, dict[str, str], str]:
    """The store served in-process as ``docqa serve`` runs it (query batching on, BM25 per ``mode``, or from
    memory within ``lexicon_max_postings`` when given), on both transports on free ports: the app, the gRPC and
    HTTP servers, their addresses and a token for the bench."""
    from service.api.graphql.context import GraphQLServices
    from service.api.grpc.server import services_for, start_grpc
    from service.api.http import start_http
    from service.bootstrap import build_app
    from service.observability.metrics import Metrics
    from service.security.tokens import mint_token

    base = settings(data_dir)
    budget = MODES[mode] if lexicon_max_postings is None else lexicon_max_postings
    index = base.index.model_copy(update={"lexicon_max_postings": budget})
    app = build_app(base.model_copy(update={"index": index}))
    app.batch_questions()
    app.keep_lexicons()
    app.embedder().embed_query("warm up")  # the model loads here, not inside a measurement
    services = services_for(app, Metrics())
    grpc_server = start_grpc(services, "127.0.0.1", 0)
    http_server = start_http(
        GraphQLServices(app, services.authenticator, services.queries, services.metrics, services.streams),
        "127.0.0.1",
        0,
    )
    token = mint_token(app.settings, "bench", ttl_s=3600)
    addresses = {"grpc": f"127.0.0.1:{grpc_server.port}", "graphql": f"127.0.0.1:{http_server.port}"}
    return app, grpc_server, http_server, addresses, token


def serve_and_measure(data_dir: Path, mode: str, levels: list[int], seconds: float) -> dict[tuple[str, int], Any]:
    app, grpc_server, http_server, addresses, token = start_servers(data_dir, mode)
    results: dict[tuple[str, int], Any] = {}
    try:
        for transport, address in addresses.items():
            measure(transport, address, token, 4, 3.0)  # warm-up: the model, the graph, the connections
            waited = time.monotonic()
            while mode == "memory" and not app.index.stats(STORE).lexicon_reads:  # type: ignore[attr-defined]
                if time.monotonic() - waited > 300:
                    raise SystemExit("the in-memory copy of the full-text index was not read within 300 s")
                time.sleep(0.1)
            for count in levels:
                results[(transport, count)] = measure(transport, address, token, count, seconds)
                row = results[(transport, count)]
                print(
                    f"  {mode:<6} {transport:<8} {count:>3} clients  "
                    f"{row['rps']:7.1f} req/s  p50 {row['p50']:7.1f} ms  p99 {row['p99']:7.1f} ms  "
                    f"errors {row['errors']}  chunks/answer {row['chunks']:.1f}  "
                    f"CPU/request: server {row['server_cpu']:.1f} ms, "
                    f"client {row['client_cpu']:.1f} ms",
                    flush=True,
                )
        embedder = app.embedder()
        batches, questions = getattr(embedder, "batches", 0), getattr(embedder, "questions", 0)
        print(f"  batcher: {questions} questions in {batches} encoder calls ({questions / max(batches, 1):.1f} each)")
        stats = app.index.stats(STORE)  # type: ignore[attr-defined]
        print(f"  BM25 last ranked by: {stats.last_lexical}; vector search plans: {stats.plans}")
    finally:
        http_server.stop()
        grpc_server.stop(0)
        app.close()
    return results


def encoder_ratio(data_dir: Path, rounds: int = 3) -> None:
    """The batcher's ceiling, in-process: 16 questions in one encoder call vs one call each (best of ``rounds``)."""
    from service.bootstrap import build_app

    app = build_app(settings(data_dir))
    embedder = app.embedder()
    embedder.embed_query("warm up")
    one_call, one_by_one = [], []
    for _ in range(rounds):
        started = time.perf_counter()
        embedder.embed_documents(QUESTIONS[:16])
        one_call.append(time.perf_counter() - started)
        started = time.perf_counter()
        for question in QUESTIONS[:16]:
            embedder.embed_query(question)
        one_by_one.append(time.perf_counter() - started)
    app.close()
    batched, single = min(one_call) * 1000, min(one_by_one) * 1000
    print(
        f"encoder alone: 16 questions one call each {single:.0f} ms, in one call {batched:.0f} ms "
        f"({single / batched:.1f}x)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20000, help="chunks in the store (default 20000)")
    parser.add_argument("--seconds", type=float, default=4.0, help="seconds per measurement (default 4)")
    parser.add_argument("--clients", default="1,4,16,64", help="client counts (default 1,4,16,64)")
    parser.add_argument(
        "--vectors",
        choices=("hashed", "low-rank"),
        default="hashed",
        help="the store's synthetic vectors: hashed words (no HNSW graph keeps its recall on them) or of a low "
        "intrinsic dimension, as real embeddings (the graph is built and saved); a new --data-dir for each",
    )
    parser.add_argument(
        "--data-dir", type=Path, default=Path("/tmp/docqa-bench-concurrency"), help="kept between runs (the store)"
    )
    args = parser.parse_args()
    levels = [int(c) for c in args.clients.split(",")]
    started = time.monotonic()
    chunks = build_store(args.data_dir, args.chunks, args.vectors)
    print(f"store {STORE}: {chunks} chunks (ready in {time.monotonic() - started:.0f} s)", flush=True)
    encoder_ratio(args.data_dir)
    table = {mode: serve_and_measure(args.data_dir, mode, levels, args.seconds) for mode in MODES}
    print()
    print(
        f"{'transport':<9} {'clients':>7} | {'fts5: req/s':>11} {'p50':>7} {'p99':>7} | "
        f"{'memory: req/s':>13} {'p50':>7} {'p99':>7} | {'req/s x':>7}"
    )
    for transport in ("grpc", "graphql"):
        for count in levels:
            old, new = table["fts5"][(transport, count)], table["memory"][(transport, count)]
            print(
                f"{transport:<9} {count:>7} | {old['rps']:11.1f} {old['p50']:7.1f} {old['p99']:7.1f} | "
                f"{new['rps']:13.1f} {new['p50']:7.1f} {new['p99']:7.1f} | {new['rps'] / old['rps']:7.2f}"
            )
    if 1 in levels and 16 in levels:
        for transport in ("grpc", "graphql"):
            ratios = [table[mode][(transport, 16)]["rps"] / table[mode][(transport, 1)]["rps"] for mode in MODES]
            print(f"{transport}: throughput 16 clients ÷ 1 client: fts5 {ratios[0]:.2f}x, memory {ratios[1]:.2f}x")
            one = table["memory"][(transport, 1)]
            busy = one["server_cpu"] + one["client_cpu"]
            cores = os.cpu_count() or 1
            print(
                f"{transport}: one client, memory: {one['rps']:.1f} req/s using {busy:.1f} ms of CPU per request "
                f"(server {one['server_cpu']:.1f}, client {one['client_cpu']:.1f}); {cores} cores serve at most "
                f"{cores * 1000 / busy:.1f} req/s at that cost, {cores * 1000 / busy / one['rps']:.2f}x one client"
            )
    cells = {
        f"{mode}/{transport}/{count}": row for mode, rows in table.items() for (transport, count), row in rows.items()
    }
    record("concurrency", {"chunks": chunks, "vectors": args.vectors, "seconds": args.seconds, **cells})


if __name__ == "__main__":
    main()
