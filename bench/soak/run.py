"""The soak: two ``docqa serve`` replicas sharing a PostgreSQL of the soak's own and one data directory, under
mixed load (questions over GraphQL and gRPC, streamed or not, summaries, comparisons, history, ratings, an
admin changing a document's ACL, indexing runs), while faults are injected on a schedule; invariants checked
from the outside. The replicas answer extractively on the embedded index, or with a watsonx.ai stand-in and on
an OpenSearch fake that the soak runs and fails (``bench/soak/standins.py``).

Invariants (each broken one is a violation; the run must end with none):

- **no leak:** no reply shows a canary of a document its caller may not read (the leakage benchmark's world
  and oracle; the one document whose ACL the admin keeps changing is left out of the check);
- **no answer without its rows:** every answer a client received has its audit row and history entry (an
  answer given without the language model, its sources only, too);
- **no lost ACL change:** the ACL PostgreSQL holds at the end is the last one an admin was told was saved;
- **indexing recovers:** after a run killed or starved mid-write, a re-run leaves the store with exactly the
  chunks a clean run gives (no duplicate, none missing);
- **documented errors only:** a caller never gets INTERNAL, an HTTP 500 or a traceback;
- **recovery without a restart:** after each dependency comes back a request succeeds (the time it took is
  the recovery time; after a language model fault, an answer the model wrote), ``/readyz`` answered 503 while
  PostgreSQL or OpenSearch was down and 200 afterwards;
- **bounded memory:** each replica's resident memory stays under ``--rss-limit-mb``.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.leakage.docqa_target import DOCQA, ROOT, DocQATarget
from bench.leakage.world import ADMIN, World, generate
from bench.soak.dependency_faults import GROUPS
from bench.soak.faults import FAULTS, inject, injectable
from bench.soak.postgres import Cluster
from bench.soak.standins import MODEL_MARK, StandIns
from service.domain.queries import NO_ANSWER_GENERATED

CANARY = re.compile(r"(?:CANARY|TITLE)-[A-Z]+-[A-Z0-9]{6,10}")
TOGGLED = ("corp", "legal/kestrel.md")  # the document whose ACL the admin keeps changing
USERS = ("alice", "bob", "carol", "dave", "erin", "vic")
BAD = ("INTERNAL", "Traceback", "HTTP 500")


class Replica(DocQATarget):
    """A ``docqa serve`` on the shared data directory and the soak's PostgreSQL."""

    def __init__(self, work: Path, database_url: str, settings: dict[str, str]) -> None:
        super().__init__(keep=True, rerank="offline", work=work)
        self.database_url = database_url
        self.settings = settings  # DOCQA_* variables: the stand-ins the replicas use

    def _env(self) -> dict[str, str]:
        return {**super()._env(), "DOCQA_DATABASE_URL": self.database_url, **self.settings}

    def rss_mb(self) -> float:
        if self.process is None or self.process.poll() is not None:
            return 0.0
        try:
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    def ready(self) -> int:
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(f"{self.url}/readyz", timeout=5) as reply:
                return int(reply.status)
        except urllib.error.HTTPError as error:
            return int(error.code)
        except OSError:
            return 0


@dataclass
class Call:
    at: float
    replica: int
    transport: str
    action: str
    user: str
    ok: bool
    error: str
    wall_ms: float
    query_id: str = ""
    leaks: list[str] = field(default_factory=list)
    #: An answer the language model wrote (the stand-in's), not the sources-only reply given without it.
    llm: bool = False
    #: A reply with its sources and "No answer was generated" (the language model failed it).
    unanswered: bool = False


@dataclass
class Soak:
    work: Path
    minutes: float
    fault_every_s: float
    faults: list[str]
    clients: int
    seed: int
    rss_limit_mb: float
    #: Inject every listed fault at least once, even past ``minutes`` (a short run that still covers each).
    each_once: bool = False
    #: ``extractive`` or ``watsonx-standin``; ``embedded`` or ``opensearch-fake`` (``bench/soak/standins.py``).
    llm: str = "extractive"
    index: str = "embedded"
    world: World = field(init=False)
    standins: StandIns = field(init=False)
    cluster: Cluster = field(init=False)
    replicas: list[Replica] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    injected: list[dict[str, Any]] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    acked_acl: list[tuple[float, list[str]]] = field(default_factory=list)
    ready_log: list[tuple[float, int, int]] = field(default_factory=list)
    peak_rss: dict[int, float] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- set-up --------------------------------------------------------------------------------------------
    def setup(self) -> None:
        self.world = generate(self.seed)
        self.standins = StandIns(self.work, self.llm, self.index)
        self.standins.start()
        self.cluster = Cluster(self.work / "pg")
        self.cluster.create()
        self.data_on_tmpfs = False
        if os.geteuid() == 0 and {"disk-full", "read-only"} & set(self.faults):
            data = self.work / "data"
            data.mkdir(parents=True, exist_ok=True)
            mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2g", "tmpfs", str(data)], capture_output=True)
            self.data_on_tmpfs = mounted.returncode == 0
        first = Replica(self.work, self.cluster.url, self.standins.env())
        first.cli("db", "upgrade")
        first.start(self.world)
        second = Replica(self.work, self.cluster.url, self.standins.env())
        second._serve()
        self.replicas = [first, second]
        for name in self.faults:
            ok, why = injectable(name, self)
            if not ok:
                self.skipped[name] = why
        self.faults = [f for f in self.faults if f not in self.skipped]

    def docqa(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*DOCQA, *args], capture_output=True, text=True, env=self.replicas[0]._env(), cwd=ROOT, timeout=timeout
        )

    # -- load ----------------------------------------------------------------------------------------------
    def _record(self, call: Call, text: str) -> None:
        user = call.user
        for canary in set(CANARY.findall(text)) if call.ok else ():
            document = next((d for d in self.world.documents.values() if canary in (d.canary, d.title_canary)), None)
            if document is None or (document.store, document.id) == TOGGLED:
                continue
            if not self.world.may_read(user, document):
                call.leaks.append(canary)
        with self._lock:
            self.calls.append(call)

    def client(self, stop: threading.Event, rng: random.Random) -> None:
        answered: list[tuple[str, str, int, str]] = []
        while not stop.is_set():
            index = rng.randrange(len(self.replicas))
            replica = self.replicas[index]
            transport, user = rng.choice(("graphql", "grpc")), rng.choice(USERS)
            document = rng.choice(list(self.world.documents.values()))
            roll = rng.random()
            started = time.monotonic()
            try:
                if roll < 0.6:
                    action = "stream" if roll < 0.15 else "ask"
                    question = f"What does the {document.topic} say?"
                    reply = replica.ask(transport, user, document.store, question, stream=action == "stream")
                elif roll < 0.72:
                    action = "summarize"
                    reply = replica.summarize(transport, user, document.store, document.id)
                elif roll < 0.77:
                    action = "compare"
                    reply = replica.compare(transport, user, "corp", ["public/harbour.md", "hr/osprey.md"])
                elif roll < 0.87 and answered:
                    action = "rate"
                    who, query, replica_index, how = answered[rng.randrange(len(answered))]
                    user, transport, replica = who, how, self.replicas[replica_index]
                    reply = replica.rate(transport, user, query, "soak")
                else:
                    action = "history"
                    reply = replica.history(transport, user)
            except Exception as exc:  # a transport that broke mid-call (a killed replica): the client's view
                self._record(Call(started, index, transport, "error", user, False, repr(exc)[:200], 0.0), "")
                continue
            if action == "stream" and transport == "graphql" and not reply.ok:
                reply.error = f"{','.join(_event_codes(reply.text)) or 'no code'}: {reply.error}"
            call = Call(started, index, transport, action, user, reply.ok, reply.error[:300], reply.wall_ms)
            call.unanswered = reply.ok and NO_ANSWER_GENERATED in reply.text
            call.llm = reply.ok and MODEL_MARK in reply.text and not call.unanswered
            if reply.ok and action in ("ask", "stream", "summarize", "compare") and reply.query_id:
                call.query_id = reply.query_id
                if action in ("ask", "stream"):
                    answered.append((user, reply.query_id, index, transport))
            self._record(call, reply.text)

    def admin(self, stop: threading.Event, rng: random.Random) -> None:
        store, document = TOGGLED
        while not stop.wait(4.0):
            allow = rng.choice((["group:everyone"], ["group:legal"], ["user:carol", "group:finance"]))
            try:
                reply = self.replicas[rng.randrange(len(self.replicas))]._graphql(
                    ADMIN,
                    "mutation($d:String!,$a:[String!]!,$s:String){setDocumentAcl(documentId:$d,allow:$a,storeId:$s)"
                    "{documentId}}",
                    {"d": document, "a": allow, "s": store},
                )
            except OSError:  # the replica asked is being killed: not acknowledged
                continue
            if reply.ok:
                with self._lock:
                    self.acked_acl.append((time.monotonic(), sorted(allow)))

    def sampler(self, stop: threading.Event) -> None:
        while not stop.wait(0.5):
            for index, replica in enumerate(self.replicas):
                self.ready_log.append((time.monotonic(), index, replica.ready()))
                self.peak_rss[index] = max(self.peak_rss.get(index, 0.0), replica.rss_mb())

    # -- the run -------------------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        stop = threading.Event()
        rng = random.Random(self.seed)
        threads = [
            threading.Thread(target=self.client, args=(stop, random.Random(rng.random())), daemon=True)
            for _ in range(self.clients)
        ]
        threads += [
            threading.Thread(target=self.admin, args=(stop, random.Random(rng.random())), daemon=True),
            threading.Thread(target=self.sampler, args=(stop,), daemon=True),
        ]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        end = started + self.minutes * 60
        schedule = list(self.faults)
        turn = 0
        while schedule and (time.monotonic() < end or (self.each_once and turn < len(schedule))):
            if stop.wait(self.fault_every_s):
                break
            if time.monotonic() >= end and not (self.each_once and turn < len(schedule)):
                break
            kind = schedule[turn % len(schedule)]
            turn += 1
            self.injected.append(inject(kind, self))
        remaining = end - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)
        stop.set()
        for thread in threads:
            thread.join(timeout=180)
        self.check()
        return self.report(time.monotonic() - started)

    # -- after ---------------------------------------------------------------------------------------------
    def first_success_after(self, moment: float) -> float | None:
        with self._lock:
            times = [c.at for c in self.calls if c.ok and c.at >= moment]
        return min(times) - moment if times else None

    def check(self) -> None:
        from sqlalchemy import create_engine, text

        leaks = [c for c in self.calls if c.leaks]
        if leaks:
            self.violations.append(f"{len(leaks)} replies showed canaries their caller may not read: {leaks[0]}")
        bad = [c for c in self.calls if any(b in c.error for b in BAD)]
        if bad:
            self.violations.append(f"{len(bad)} undocumented errors, e.g. {bad[0].error}")
        engine = create_engine(self.cluster.url)
        try:
            with engine.connect() as db:
                outcomes: dict[str, str] = {
                    r[0]: r[1]
                    for r in db.execute(
                        text("select query_id, outcome from query_audit where outcome in ('OK', 'OK_NO_ANSWER')")
                    )
                }
                kept = {r[0] for r in db.execute(text("select query_id from query_history"))}
                override = [
                    r[0]
                    for r in db.execute(
                        text("select principal from acl_override_entries where store_id = :s and document_id = :d"),
                        {"s": TOGGLED[0], "d": TOGGLED[1]},
                    )
                ]
        finally:
            engine.dispose()
        audited = set(outcomes)
        received = {c.query_id for c in self.calls if c.query_id}
        if self.standins.watsonx is not None:  # the audit row says whether the model answered, as the caller saw
            told = [c for c in self.calls if c.query_id and c.action in ("ask", "stream") and (c.llm or c.unanswered)]
            wrong = [c for c in told if outcomes.get(c.query_id, "") == ("OK" if c.unanswered else "OK_NO_ANSWER")]
            if wrong:
                self.violations.append(
                    f"{len(wrong)} answers audited otherwise than received (with or without the model), e.g."
                    f" {wrong[0].query_id}"
                )
        missing = sorted(received - audited), sorted(received - kept)
        if missing[0] or missing[1]:
            self.violations.append(
                f"answers without audit row {len(missing[0])}, without history entry {len(missing[1])}"
            )
        self.unreceived = len(kept - received)
        if self.acked_acl and sorted(override) != self.acked_acl[-1][1]:
            self.violations.append(
                f"last acknowledged ACL {self.acked_acl[-1][1]} but PostgreSQL holds {sorted(override)}"
            )
        for index, peak in self.peak_rss.items():
            if peak > self.rss_limit_mb:
                self.violations.append(f"replica {index} reached {peak:.0f} MB (limit {self.rss_limit_mb:.0f})")
        for fault in self.injected:
            self.violations.extend(fault.get("violations", []))

    def report(self, seconds: float) -> dict[str, Any]:
        def p(values: list[float], q: float) -> float:
            ordered = sorted(values)
            return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0

        windows = [(f["started"], f["ended"] + (f.get("recovery_s") or 0.0)) for f in self.injected]
        during = [c.wall_ms for c in self.calls if c.ok and any(a <= c.at <= b for a, b in windows)]
        outside = [c.wall_ms for c in self.calls if c.ok and not any(a <= c.at <= b for a, b in windows)]
        errors = Counter(_kind(c.error) for c in self.calls if not c.ok)
        questions = [c for c in self.calls if c.ok and c.action in ("ask", "stream") and c.query_id]
        return {
            "seconds": round(seconds, 1),
            "dependencies": self.standins.describe(),
            "requests": len(self.calls),
            "served": sum(c.ok for c in self.calls),
            **(
                {
                    "answered_by_the_model": sum(c.llm for c in questions),
                    "answered_without_it": sum(c.unanswered for c in questions),
                }
                if self.standins.watsonx is not None
                else {}
            ),
            "by_action": dict(Counter(c.action for c in self.calls)),
            "errors": dict(errors),
            "faults": [{k: v for k, v in f.items() if k != "violations"} for f in self.injected],
            "faults_by_kind": dict(Counter(f["kind"] for f in self.injected)),
            "skipped": self.skipped,
            "violations": self.violations,
            "p50_ms": {"outside faults": p(outside, 0.5), "during faults": p(during, 0.5)},
            "p99_ms": {"outside faults": p(outside, 0.99), "during faults": p(during, 0.99)},
            "peak_rss_mb": {f"replica {i}": round(v) for i, v in self.peak_rss.items()},
            "acl_changes_acknowledged": len(self.acked_acl),
            "answers_kept_not_received": getattr(self, "unreceived", 0),
        }

    def close(self) -> None:
        for replica in self.replicas:
            replica.stop()
        if hasattr(self, "standins"):
            self.standins.close()
        if hasattr(self, "cluster"):
            self.cluster.destroy()
        if getattr(self, "data_on_tmpfs", False):
            subprocess.run(["umount", "-l", str(self.work / "data")], capture_output=True)


def _kind(error: str) -> str:
    for code in ("UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "NOT_FOUND", "INTERNAL", "CANCELLED"):
        if code in error:
            return code
    if "Connection refused" in error or "ConnectionRefused" in error or "URLError" in error:
        return "connection refused"
    return error.split(":")[0][:40] or "unknown"


def _event_codes(text: str) -> list[str]:
    """The error codes (``extensions.code``) in a GraphQL stream's server-sent events."""
    codes: list[str] = []
    for line in text.splitlines():
        if line.startswith("data:"):
            try:
                event = json.loads(line[5:])
            except json.JSONDecodeError:
                continue
            codes += [str((e.get("extensions") or {}).get("code")) for e in event.get("errors") or []]
    return codes


def write_json(report: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, default=str))


def faults_named(spec: str) -> list[str]:
    """The faults ``spec`` names in order: ``all``, or names and groups (``watsonx``: each watsonx fault)."""
    names = list(FAULTS) if spec == "all" else [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in FAULTS and n not in GROUPS]
    if unknown:
        known = ", ".join([*FAULTS, *(f"{g} (each {g}-* fault)" for g in GROUPS)])
        raise SystemExit(f"unknown fault(s) {', '.join(unknown)}; known: {known}")
    return [fault for n in names for fault in GROUPS.get(n, [n])]
