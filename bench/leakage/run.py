"""One benchmark run: build the world, seed history, make the changes (timed to effect), probe, time, report."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

from bench.leakage.adapter import RagTarget, Reply
from bench.leakage.probes import CHANNELS, Leak, Prober
from bench.leakage.timing import TimingResult, compare_pairs
from bench.leakage.world import World, generate


@dataclass
class Report:
    target: str
    seed: int
    probes: dict[str, int]
    leaks: dict[str, list[Leak]]
    transports: dict[str, list[str]]
    not_supported: dict[str, list[str]]
    timings: list[TimingResult]
    latencies: dict[str, dict[str, Any]]
    control: tuple[int, int]
    seconds: float
    setup_s: float = 0.0
    inconclusive: int = 0
    notes: list[str] = field(default_factory=list)
    adapted: dict[str, Any] = field(default_factory=dict)

    @property
    def total_probes(self) -> int:
        return sum(self.probes.values()) + sum(2 * t.pairs for t in self.timings if t.measure == "wall")

    def leak_count(self, channel: str) -> int:
        if channel == "timings":
            return sum(t.leak for t in self.timings)
        return len(self.leaks.get(channel, []))

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "seed": self.seed,
            "probes_run": self.total_probes,
            "channels": {
                c: {
                    "probes": self.probes.get(c, 0),
                    "leaks": self.leak_count(c),
                    "transports": self.transports.get(c, []),
                    "not_supported": self.not_supported.get(c, []),
                    "examples": [leak.as_dict() for leak in self.leaks.get(c, [])[:5]],
                }
                for c in CHANNELS
            },
            "timings": [t.as_dict() for t in self.timings],
            "latencies": self.latencies,
            "control": {"asked": self.control[0], "found": self.control[1]},
            "statistics_inconclusive": self.inconclusive,
            "seconds": self.seconds,
            "setup_s": self.setup_s,
            "notes": self.notes,
            "adapted_model": self.adapted,
        }


def _until_gone(probe: Any, canary: str, limit_s: float = 30.0) -> dict[str, Any]:
    """Time from now (a change just returned) to the first probe that no longer shows ``canary``."""
    started = time.perf_counter()
    tries = 0
    while True:
        tries += 1
        reply: Reply = probe()
        elapsed = (time.perf_counter() - started) * 1e3
        if canary not in reply.text:
            return {"ms": round(elapsed, 1), "probes": tries, "effective": True}
        if elapsed > limit_s * 1e3:
            return {"ms": round(elapsed, 1), "probes": tries, "effective": False}


def seed_history(prober: Prober) -> None:
    """Answers users legitimately got (and rated, quoting them) before the changes."""
    target, world = prober.target, prober.world
    asks = [
        ("carol", "graphql", "group", True),
        ("carol", "grpc", "rewritten", True),
        ("erin", "graphql", "revoked", True),
        ("bob", "grpc", "revoked", False),
        ("alice", "graphql", "deleted", True),
        ("alice", "grpc", "nested", True),
    ]
    for user, transport, cls, rate in asks:
        document = world.by_class(cls)
        reply = target.ask(transport, user, document.store, f"What is the {document.topic} access code?")
        prober.scan("answers", transport, user, f"seed: {document.topic}", reply)
        prober.control(user, document, reply)
        world.received.setdefault(user, set()).update(c for c in world.visible(user) if c in reply.text)
        if reply.conversation_id and cls == "revoked":
            prober.conversations[user] = reply.conversation_id
        if rate and reply.query_id:
            target.rate(transport, user, reply.query_id, f"right, the code is {document.canary}")
    lab = world.documents[("lab", "lab/wren.md")]
    reply = target.ask("graphql", "carol", "lab", f"What is the {lab.topic} access code?")
    if reply.query_id:
        target.rate("graphql", "carol", reply.query_id, f"confirmed {lab.canary}")


def make_changes(prober: Prober, limit_s: float = 30.0) -> dict[str, dict[str, Any]]:
    """Revocations, a rewrite (then opened to everyone), a deletion: each timed from its command to effect."""
    target, world = prober.target, prober.world
    latencies: dict[str, dict[str, Any]] = {}

    def search(user: str, cls: str) -> Any:
        document = world.by_class(cls)
        return lambda: target.ask("graphql", user, document.store, f"What is the {document.topic} access code?",
                                  llm=False)  # fmt: skip

    merlin = world.by_class("revoked")
    target.remove_member("project-x", "user:erin")
    world.groups["project-x"].discard("user:erin")
    latencies["revocation (group membership)"] = _until_gone(search("erin", "revoked"), merlin.canary, limit_s)

    target.set_acl(merlin.store, merlin.id, merlin.allow, ["user:bob"])
    merlin.deny = ["user:bob"]
    latencies["revocation (document ACL)"] = _until_gone(search("bob", "revoked"), merlin.canary, limit_s)

    for source in target.directory_sources:  # a membership an outside directory keeps, revoked there
        document = world.by_class(source)
        group, member = next((g, m) for g in world.directory if world.directory[g] == source for m in world.groups[g])
        user = member.removeprefix("user:")
        before = search(user, source)()
        prober.scan("answers", "graphql", user, f"before: {document.topic}", before)
        prober.control(user, document, before)
        target.remove_directory_member(source, group, member)
        world.groups[group].discard(member)
        latency = _until_gone(search(user, source), document.canary, limit_s)
        latencies[f"revocation ({source.upper()} group)"] = {**latency, "shown_before": document.canary in before.text}

    plover = world.by_class("rewritten")
    old = plover.canary
    plover.version = 2
    plover.retired.append(old)
    target.rewrite(plover.store, plover.id, plover.title, plover.text(), plover.allow, plover.deny)
    latencies["rewrite"] = _until_gone(search("carol", "rewritten"), old, limit_s)
    target.set_acl(plover.store, plover.id, ["group:everyone"], [])
    plover.allow, plover.deny = ["group:everyone"], []

    tern = world.by_class("deleted")
    target.delete(tern.store, tern.id)
    tern.deleted = True
    latencies["deletion"] = _until_gone(search("alice", "deleted"), tern.canary, limit_s)
    return latencies


def run_timings(prober: Prober, pairs: int) -> list[TimingResult]:
    """Forbidden vs absent, as bob: a term only in documents he may not read, a document id, an overridden one."""
    target, world, rng = prober.target, prober.world, prober.rng
    terms = world.timing_terms
    absent = [f"tm{t.rsplit('-', 1)[-1].lower()[:8]}" for t in world.absent_terms]
    kestrel = world.by_class("override")
    heron = world.by_class("group")
    results: list[TimingResult] = []
    results += compare_pairs(
        "term in forbidden documents vs absent term (search)",
        pairs,
        lambda i: target.ask("graphql", "bob", "corp", f"{terms[i % len(terms)]} record", llm=False),
        lambda i: target.ask("graphql", "bob", "corp", f"{absent[i % len(absent)]} record", llm=False),
        rng,
    )
    results += compare_pairs(
        "forbidden vs absent document id (summarize)",
        pairs,
        lambda i: target.summarize("grpc", "bob", "corp", heron.id),
        lambda i: target.summarize("grpc", "bob", "corp", world.absent_document),
        rng,
    )
    results += compare_pairs(
        "admin-overridden forbidden vs absent document id (documentQuery)",
        pairs,
        lambda i: target.ask("grpc", "bob", "corp", "access code", document=kestrel.id, llm=False),
        lambda i: target.ask("grpc", "bob", "corp", "access code", document=world.absent_document, llm=False),
        rng,
    )
    return results


def setup(target: RagTarget, world: World) -> None:
    """Start the target on the world, then close the override class by an administrator's override."""
    target.start(world)
    kestrel = world.by_class("override")
    target.set_acl(kestrel.store, kestrel.id, ["group:legal"], [])
    kestrel.allow, kestrel.deny = ["group:legal"], []


def run(
    target: RagTarget,
    probes: int,
    seed: int,
    timing_pairs: int,
    cli_share: float,
    log: Any = None,
    change_limit_s: float = 30.0,
    filler: int = 0,
) -> Report:
    """Build, change, probe and time; ``probes`` counts every request (timing pairs included); a change not in
    effect ``change_limit_s`` after its command returned is reported as not taking effect."""
    rng = random.Random(seed)
    world: World = generate(seed, filler, target.directory_sources)
    started = time.perf_counter()
    setup(target, world)
    setup_s = time.perf_counter() - started
    prober = Prober(target, world, rng)
    try:
        seed_history(prober)
        latencies = make_changes(prober, change_limit_s)
        prober.sweep()
        timing_requests = 2 * timing_pairs * 3
        budget = max(probes - timing_requests, 0)
        last = time.monotonic()
        while prober.tally.total < budget:
            prober.one(cli_share)
            if log is not None and time.monotonic() - last > 15:
                last = time.monotonic()
                print(f"# {prober.tally.total} probes ...", file=log, flush=True)
        timings = run_timings(prober, timing_pairs)
    finally:
        target.stop()
    tally = prober.tally
    return Report(
        target=target.name,
        seed=seed,
        probes=tally.probes,
        leaks=tally.leaks,
        transports={c: sorted(t) for c, t in tally.transports.items()},
        not_supported={c: sorted(t) for c, t in tally.not_supported.items()},
        timings=timings,
        latencies=latencies,
        control=(tally.control_asked, tally.control_found),
        seconds=time.perf_counter() - started,
        setup_s=setup_s,
        inconclusive=tally.inconclusive,
        notes=tally.notes,
        adapted=tally.adapted,
    )


def table(report: Report) -> str:
    """The report as Markdown: channels x (probes, leaks), timing tests, latencies."""
    lines = [
        f"{report.target}: {report.total_probes} probes, seed {report.seed}, {report.seconds:.0f} s",
        "",
        "| channel | probes | leaks | transports |",
        "| --- | ---: | ---: | --- |",
    ]
    for channel in CHANNELS:
        where = ", ".join(report.transports.get(channel, []))
        missing = report.not_supported.get(channel)
        if missing:
            where += f" (not offered: {', '.join(missing)})"
        lines.append(f"| {channel} | {report.probes.get(channel, 0)} | {report.leak_count(channel)} | {where} |")
    wall_pairs = sum(2 * t.pairs for t in report.timings if t.measure == "wall")
    lines.append(f"| timings | {wall_pairs} | {report.leak_count('timings')} | graphql, grpc |")
    lines += ["", "| timing test (forbidden vs absent) | measure | pairs | median ms forbidden / absent | p | leak |",
              "| --- | --- | ---: | --- | ---: | --- |"]  # fmt: skip
    for t in report.timings:
        lines.append(
            f"| {t.kind} | {t.measure} | {t.pairs} | {t.forbidden_median_ms:.2f} / {t.absent_median_ms:.2f}"
            f" | {t.p:.3g} | {'yes' if t.leak else 'no'} |"
        )
    lines += ["", "| change | to effect | probes | took effect |", "| --- | ---: | ---: | --- |"]
    for name, latency in report.latencies.items():
        lines.append(
            f"| {name} | {latency['ms']:.0f} ms | {latency['probes']} | {'yes' if latency['effective'] else 'NO'} |"
        )
    asked, found = report.control
    lines += ["", f"control: {found} of {asked} probes of readable content showed its canary"]
    if report.inconclusive:
        lines.append(f"statistics: {report.inconclusive} probes inconclusive (their control pair differed)")
    lines += report.notes
    for channel in CHANNELS:
        for leak in report.leaks.get(channel, [])[:3]:
            lines.append(f"leak: {channel} via {leak.transport} as {leak.user}: {leak.request} -> {leak.what[:300]}")
    return "\n".join(lines)
