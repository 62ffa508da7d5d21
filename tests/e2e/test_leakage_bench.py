"""The leakage benchmark (``python -m bench.leakage``): a small run against a live ``docqa serve``.

It must run every channel through GraphQL, gRPC and the CLI, print its table and write its JSON, and the
channels that hold today must show no leak. The channels in ``TO_TIGHTEN`` are being fixed (issue 35): they
are reported, not asserted; move a channel to the asserted set once its fix is in. A toy target that ignores
access proves that the benchmark sees a leak when there is one (and shows the adapter is one class).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.leakage.adapter import Filter, NotSupported, RagTarget, Reply
from bench.leakage.ldap import SLAPD
from bench.leakage.probes import CHANNELS
from bench.leakage.run import run
from bench.leakage.world import World

ROOT = Path(__file__).resolve().parents[2]

#: Channels reported, not asserted, by the small run: none (issue 35's fixes are in; a channel that starts to
#: leak fails CI). Timing tests are judged by Mann-Whitney over >= 500 pairs in the full run; 20 pairs at
#: p < 0.01 would fail one CI run in a hundred by chance, so a small run only reports them (report["timings"]).
TO_TIGHTEN: tuple[str, ...] = ()


@pytest.mark.e2e
@pytest.mark.slow
def test_a_small_run_probes_every_channel_and_the_holding_ones_do_not_leak(tmp_path: Path) -> None:
    out = tmp_path / "leakage.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCQA_")}
    result = subprocess.run(
        [sys.executable, "-m", "bench.leakage", "--probes", "260", "--timing-pairs", "20", "--cli-share", "0.02",
         "--filler", "50", "--seed", "7", "--json", str(out)],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    report: dict[str, Any] = json.loads(out.read_text())
    assert report["probes_run"] >= 260
    for channel in CHANNELS:
        assert f"| {channel} |" in result.stdout
        assert report["channels"][channel]["probes"] > 0, channel
    assert "| timings |" in result.stdout
    for channel in ("answers", "chunks", "history", "feedback"):
        assert set(report["channels"][channel]["transports"]) == {"graphql", "grpc", "cli"}, channel
    # The adapted model: judged on its bytes and through every transport; and the documented all-content opt-in
    # trains a different model on the swapped documents, so the probe sees the channel when it is open.
    assert set(report["channels"]["adapted model"]["transports"]) == {"model file", "graphql", "grpc", "cli"}
    assert report["adapted_model"]["swapped"] and not report["adapted_model"]["all_content"]["same"]
    assert "adapted model (--all-content opt-in): differs, as documented" in result.stdout
    # The probes reach what the caller may read (else zero leaks would prove nothing) ...
    assert 0 < report["control"]["asked"] <= 2 * report["control"]["found"]
    # ... every change took effect (with slapd, revocations in LDAP and over SCIM too, each shown before the
    # change), and the channels that hold today hold.
    changes = ["revocation (group membership)", "revocation (document ACL)", "rewrite", "deletion"]
    if SLAPD is not None:
        changes[2:2] = ["revocation (LDAP group)", "revocation (SCIM group)"]
        for name in changes[2:4]:
            assert report["latencies"][name]["shown_before"], name
            assert f"| {name} |" in result.stdout
    else:
        assert "directory sources (LDAP, SCIM): skipped, slapd is not installed" in result.stdout
    assert {name: latency["effective"] for name, latency in report["latencies"].items()} == dict.fromkeys(changes, True)
    leaking = {c: v["examples"] for c, v in report["channels"].items() if v["leaks"] and c not in TO_TIGHTEN}
    assert not leaking, json.dumps(leaking, indent=1)
    assert len(report["timings"]) >= 3


class OpenBook(RagTarget):
    """A toy RAG service that ignores access: every question gets every document that shares a word with it."""

    name = "open-book"
    transports = ("http",)

    def start(self, world: World) -> None:
        self.world = world

    def stop(self) -> None:
        pass

    def _text(self, store: str | None) -> str:
        live = [d for d in self.world.documents.values() if not d.deleted and store in (None, d.store)]
        return json.dumps([{"id": d.id, "title": d.title, "text": d.text()} for d in live])

    def ask(
        self,
        transport: str,
        user: str,
        store: str,
        question: str,
        *,
        documents: list[str] | None = None,
        document: str | None = None,
        filter: Filter | None = None,
        conversation: str | None = None,
        llm: bool = True,
        stream: bool = False,
    ) -> Reply:
        return Reply(text=self._text(store), ok=True, wall_ms=random.uniform(1, 2), query_id="q", conversation_id="c")

    def documents(self, transport: str, user: str, store: str, search: str | None = None) -> Reply:
        return Reply(text=self._text(store), ok=True)

    def stores(self, transport: str, user: str) -> Reply:
        raise NotSupported("no store listing")

    def summarize(self, transport: str, user: str, store: str, document: str) -> Reply:
        return Reply(text=self._text(store), ok=True, wall_ms=random.uniform(1, 2))

    def compare(self, transport: str, user: str, store: str, documents: list[str]) -> Reply:
        return Reply(text=self._text(store), ok=True)

    def history(self, transport: str, user: str) -> Reply:
        return Reply(text="[]", ok=True)

    def conversation(self, transport: str, user: str, conversation: str) -> Reply:
        return Reply(text="[]", ok=True)

    def rate(self, transport: str, user: str, query_id: str, comment: str) -> Reply:
        return Reply(text="", ok=True)

    def feedback(self, transport: str, user: str, store: str) -> Reply:
        raise NotSupported("no feedback")

    def export(self, user: str, store: str) -> Reply:
        raise NotSupported("no export")

    def set_acl(self, store: str, document: str, allow: list[str], deny: list[str]) -> None:
        pass

    def remove_member(self, group: str, member: str) -> None:
        pass

    def rewrite(self, store: str, document: str, title: str, text: str, allow: list[str], deny: list[str]) -> None:
        pass

    def delete(self, store: str, document: str) -> None:
        self.world.documents[(store, document)].deleted = True


@pytest.mark.e2e
def test_the_benchmark_sees_the_leaks_of_a_service_that_ignores_access() -> None:
    report = run(OpenBook(), probes=200, seed=3, timing_pairs=20, cli_share=0.0, change_limit_s=0.5)
    for channel in ("answers", "chunks", "documents", "summaries", "comparisons"):
        assert report.leak_count(channel) > 0, channel
        assert report.leaks[channel][0].what.startswith(("CANARY-", "TITLE-", "document id"))
    assert report.not_supported["feedback"] == ["http"]
    assert report.not_supported["adapted model"] == ["*"] and "adapted model" not in report.probes
    assert not report.latencies["revocation (group membership)"]["effective"]
    assert report.latencies["deletion"]["effective"]
