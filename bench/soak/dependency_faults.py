"""Faults of the outside services the soak stands in for (``bench/soak/standins.py``), each for DEPENDENCY_S
seconds under load, then healed:

- ``watsonx-429`` (with ``Retry-After``), ``watsonx-500``, ``watsonx-hang`` (no reply until the replicas'
  timeout has passed): every generation request, streamed or not; ``watsonx-cut``: every streamed answer is
  cut after its first tokens, the connection closed mid-stream. The replicas' documented behaviour is an
  answer with its sources and "No answer was generated" (``OK_NO_ANSWER`` in the audit trail), never an error;
  recovery is the first answer the model wrote again (streamed, for ``watsonx-cut``). ``/readyz`` checks the
  model's credentials and specs at most once a minute, not generation: it must answer 200 afterwards.
- ``opensearch-429``, ``opensearch-503``, ``opensearch-hang`` (no reply until the client's timeout): every
  request to the cluster; ``/readyz`` must answer 503 meanwhile and 200 afterwards, and recovery is the first
  question answered again. ``opensearch-drop``: an indexing run whose first bulk writes are applied and their
  replies cut half-way, connection closed; the run must succeed (the adapter retries), OpenSearch must hold
  each chunk once, and a re-run must leave exactly the chunks of a clean run.

A fault that reached no request did not happen: that is a violation, never a pass.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bench.soak.outcome import recovered, result

if TYPE_CHECKING:
    from bench.soak.run import Call, Soak
    from tests.fakes_opensearch import FakeOpenSearch

DEPENDENCY_S = 5.0
#: A fault that lasts until it is healed.
UNTIL_HEALED = 10**9
GENERATION, STREAM = "/ml/v1/text/generation", "/ml/v1/text/generation_stream"
#: Tokens a cut stream sends before its connection is closed.
CUT_AFTER = 3
#: Bulk replies ``opensearch-drop`` cuts (fewer than the adapter's 4 attempts of one bulk), the first of a run of
#: this many pages.
DROPS = 3
DROP_PAGES = 48


def _model_answered(call: Call) -> bool:
    return call.llm


def _model_streamed(call: Call) -> bool:
    return call.llm and call.action == "stream"


def _question_answered(call: Call) -> bool:
    return call.action in ("ask", "stream")


def _failing(
    soak: Soak, kind: str, inject: Callable[[], list[Any]], heal: Callable[[], None]
) -> tuple[int, list[int], float, float, list[str]]:
    """The stand-in failing for DEPENDENCY_S (``inject`` until ``heal``), /readyz asked half-way: the requests
    the faults met (each counts down from UNTIL_HEALED), the /readyz states seen, its start and end, and the
    violation of a fault no request met."""
    started = time.monotonic()
    try:
        faults = inject()
        time.sleep(DEPENDENCY_S / 2)
        states = sorted({r.ready() for r in soak.replicas})
        time.sleep(DEPENDENCY_S / 2)
    finally:
        heal()
    ended = time.monotonic()
    met = sum(UNTIL_HEALED - f.times for f in faults)
    return met, states, started, ended, [] if met else [f"{kind}: no request met the fault (not injected)"]


def _ready_after(soak: Soak, kind: str) -> list[str]:
    back = [r.ready() for r in soak.replicas]
    return [] if back == [200] * len(back) else [f"{kind}: /readyz {back} after recovery"]


def _watsonx(
    kind: str, paths: tuple[str, ...], success: Callable[[Call], bool], **how: Any
) -> Callable[[Soak], dict[str, Any]]:
    def fault(soak: Soak) -> dict[str, Any]:
        standin = soak.standins.watsonx
        assert standin is not None
        met, states, started, ended, bad = _failing(
            soak, kind, lambda: [standin.fail(path, times=UNTIL_HEALED, **how) for path in paths], standin.heal
        )
        recovery = recovered(soak, ended, success=success)
        bad += _ready_after(soak, kind)
        with soak._lock:
            asked = [c for c in soak.calls if started <= c.at <= ended and c.action in ("ask", "stream")]
        degraded = sum(c.unanswered for c in asked)
        note = (
            f"{met} model requests failed over {DEPENDENCY_S:.0f} s; {degraded} of {len(asked)} questions asked"
            f" meanwhile answered with their sources only; /readyz {states}"
        )
        return result(kind, started, ended, recovery, note, bad)

    return fault


def _opensearch(kind: str, **how: Any) -> Callable[[Soak], dict[str, Any]]:
    def fault(soak: Soak) -> dict[str, Any]:
        fake = soak.standins.opensearch
        assert fake is not None
        met, states, started, ended, bad = _failing(
            soak, kind, lambda: [fake.fail("", times=UNTIL_HEALED, **how)], fake.heal
        )
        if states != [503]:
            bad.append(f"{kind}: /readyz answered {states} while OpenSearch failed")
        recovery = recovered(soak, ended, success=_question_answered)
        bad += _ready_after(soak, kind)
        note = f"{met} OpenSearch requests failed over {DEPENDENCY_S:.0f} s; /readyz {states}"
        return result(kind, started, ended, recovery, note, bad)

    return fault


def _index_chunks(fake: FakeOpenSearch, store: str) -> int:
    """Chunks the OpenSearch fake holds for ``store`` (refreshed first): what a query can find, duplicates too."""
    alias = f"docqa-{store}"
    with urllib.request.urlopen(urllib.request.Request(f"{fake.url}/{alias}/_refresh", method="POST"), timeout=30):
        pass
    with urllib.request.urlopen(f"{fake.url}/{alias}/_count", timeout=30) as reply:
        return int(json.loads(reply.read())["count"])


def opensearch_drop(soak: Soak) -> dict[str, Any]:
    """An indexing run whose first DROPS bulk writes are applied and their replies cut half-way, the connection
    closed: the adapter's retries (3) must absorb them, so the run succeeds, and the index must hold each chunk
    once (a retried bulk rewrites the same ids)."""
    from bench.soak.faults import interrupted_index, reference, reference_store

    fake = soak.standins.opensearch
    assert fake is not None
    store = f"extra-drop-{len(soak.injected)}"
    reference(soak, DROP_PAGES)  # the clean run first: the fault is the broken run's alone
    cut = fake.fail("/_bulk", drop=True, times=DROPS)
    running: list[subprocess.Popen[bytes]] = []
    try:
        record = interrupted_index(soak, "opensearch-drop", store, lambda: None, fake.heal, running, pages=DROP_PAGES)
    finally:
        fake.heal()
    met = DROPS - cut.times
    bad = record["violations"]
    if not met:
        bad.append("opensearch-drop: no bulk request met the fault (not injected)")
    if running and running[0].returncode != 0:
        bad.append(f"opensearch-drop: the run whose {met} bulk replies were cut failed (exit {running[0].returncode})")
    held, clean = _index_chunks(fake, store), _index_chunks(fake, reference_store(DROP_PAGES))
    if held != clean:
        bad.append(f"opensearch-drop: OpenSearch holds {held} chunks of {store}, a clean run {clean}")
    record["note"] = f"{met} bulk replies cut; OpenSearch holds {held} chunks (clean run {clean}); {record['note']}"
    return record


DEPENDENCY_FAULTS: dict[str, Callable[[Soak], dict[str, Any]]] = {
    "watsonx-429": _watsonx(
        "watsonx-429", (GENERATION, STREAM), _model_answered, status=429, headers={"Retry-After": "1"}
    ),
    "watsonx-500": _watsonx("watsonx-500", (GENERATION, STREAM), _model_answered, status=500),
    "watsonx-hang": _watsonx("watsonx-hang", (GENERATION, STREAM), _model_answered, delay_s=4 * DEPENDENCY_S),
    "watsonx-cut": _watsonx("watsonx-cut", (STREAM,), _model_streamed, cut_after=CUT_AFTER),
    "opensearch-429": _opensearch("opensearch-429", status=429),
    "opensearch-503": _opensearch("opensearch-503", status=503),
    "opensearch-hang": _opensearch("opensearch-hang", delay_s=4 * DEPENDENCY_S),
    "opensearch-drop": opensearch_drop,
}
#: A group's name in ``--faults`` stands for each of its faults.
GROUPS = {
    "watsonx": [name for name in DEPENDENCY_FAULTS if name.startswith("watsonx-")],
    "opensearch": [name for name in DEPENDENCY_FAULTS if name.startswith("opensearch-")],
}


def dependency_injectable(name: str, soak: Soak) -> tuple[bool, str]:
    """Whether the stand-in ``name`` fails runs in this soak, and how to run it when not."""
    if name.startswith("watsonx-") and soak.standins.watsonx is None:
        return False, "the replicas answer extractively: no language model to fail (run with --llm watsonx-standin)"
    if name.startswith("opensearch-") and soak.standins.opensearch is None:
        return False, "the replicas use the embedded index: no OpenSearch to fail (run with --index opensearch-fake)"
    return True, ""
