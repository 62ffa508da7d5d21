"""The "adapted model" channel: does a store's own trained ranking model tell a caller what they may not read?

A model trained on a chunk is a weak channel to that chunk for whoever it later ranks for. The probe builds the
world's store twice in a twin of the target whose stores are each ranked by their own model: once as it is now,
once with every document the probe's reader may not read saying something else (another canary in its text and
its title, another secret sentence). It trains each store's model (a tiny run, installed whatever it scores):

- the operator's view, the strongest: the two installed model files must be the same bytes;
- the caller's view: the same questions, asked as a reader who may read neither version of the swapped
  documents, must get the same sources back from both stores, in the same order with the same scores.

Either difference is a leak. Before that it trains both stores with the documented opt-in to learn from all
content, whose models must differ: not a leak of the default, but shown in the report, and the proof that the
probe sees the channel when it is open.
"""

from __future__ import annotations

import random
import string
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from bench.leakage.adapter import NotSupported, RagTarget, Reply, TrainedModel
from bench.leakage.probes import Leak, Prober, mask
from bench.leakage.world import Document, World

CHANNEL = "adapted model"
#: The two stores of the twin: the world's store as it is, and with the reader's unreadable documents swapped.
STORES = ("adapted-a", "adapted-b")
#: A public handbook both stores hold besides the world's documents: a training run needs 24 pseudo-queries (a
#: heading or a sentence of eight words of prose each) from 3 documents everyone may read, more than the
#: world's own few such documents make.
HANDBOOK = {
    "vacation": ("vacation", "leave", "holiday", "carry-over"),
    "expenses": ("expense", "receipt", "reimbursement", "mileage"),
    "security": ("password", "badge", "laptop", "encryption"),
    "onboarding": ("mentor", "orientation", "equipment", "induction"),
    "travel": ("flight", "hotel", "booking", "per-diem"),
    "payroll": ("salary", "payslip", "bonus", "deduction"),
    "wellbeing": ("gym", "counselling", "ergonomics", "sick-day"),
}
SECTIONS = ("Eligibility rules", "Request procedure", "Approval deadlines", "Exceptions and appeals")
#: Questions about the swapped documents asked through each transport (and two about the handbook).
MAX_SECRET_QUESTIONS = 3


class Source(NamedTuple):
    """One document as the twin indexes it."""

    id: str
    title: str
    text: str
    allow: list[str]
    deny: list[str]


@dataclass
class AdaptedTwin:
    """The twin's two stores, what was swapped in them, and the models trained on them."""

    target: RagTarget
    reader: str  # the reader the swap was made for: the one who may read fewest of the store's documents
    eligible: set[str]  # readers who may read none of the swapped documents (they may ask; others might see)
    swapped: list[Document]
    secrets: dict[str, str]  # every canary of either version of a swapped document -> its class
    questions: list[str]
    default: tuple[TrainedModel, TrainedModel]
    all_content: tuple[TrainedModel, TrainedModel]
    #: Of the questions asked as the reader after the all-content training, those whose sources differed.
    all_content_differing: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "reader": self.reader,
            "swapped": [d.id for d in self.swapped],
            "default": {"same": self.default[0].sha256 == self.default[1].sha256,
                        "models": [vars(m) for m in self.default]},
            "all_content": {"same": self.all_content[0].sha256 == self.all_content[1].sha256,
                            "models": [vars(m) for m in self.all_content],
                            "questions_differing": self.all_content_differing,
                            "questions": len(self.questions)},
            "seconds": round(self.seconds, 1),
        }  # fmt: skip


def reader_of_least(world: World, store: str, readers: Sequence[str]) -> str:
    """The reader who may read the fewest of ``store``'s documents now (the first of ``readers`` on a tie)."""
    return min(readers, key=lambda user: len(world.readable_documents(user, store)))


def handbook() -> list[Source]:
    """The public handbook (the same in both stores)."""
    out = []
    for topic, words in HANDBOOK.items():
        parts = [f"# {topic.title()} policy\n"]
        for i, section in enumerate(SECTIONS):
            a, b = words[i % 4], words[(i + 1) % 4]
            parts.append(
                f"## {topic.title()} {section}\n\n"
                f"Every employee who asks about {a} must read the {b} section of the {topic} handbook first. "
                f"The {topic} team answers questions about {a} and {b} within three working days of the request.\n"
            )
        out.append(Source(f"handbook/{topic}.md", f"{topic.title()} policy", "\n".join(parts), ["group:everyone"], []))
    return out


def _token(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(n))


def _secret(document: Document, rng: random.Random) -> str:
    """A secret sentence of prose (the extra text of a swapped document in either store). It stands in for the
    world's extra text, the timing probe's archive keys: as a pseudo-query they are longer than the tiny run's
    token limit, which ``docqa adapt`` cannot truncate."""
    place = rng.choice(["Lisbon", "Tromso", "Valparaiso", "Hobart", "Windhoek", "Ushuaia"])
    return f"The board moved the {document.topic} budget to the {place} office in a closed session last week."


def _swap(document: Document, rng: random.Random) -> Document:
    """``document`` saying something else: another canary in its text and title, another secret sentence."""
    cls = document.cls.upper()
    return replace(
        document, canary=f"CANARY-{cls}-{_token(rng, 10)}", title_canary=f"TITLE-{cls}-{_token(rng, 6)}",
        extra=_secret(document, rng),
    )  # fmt: skip


def _source(document: Document) -> Source:
    text = document.text()
    if document.version > 1 and document.extra:  # a rewritten document's text() leaves its extra out
        text += f"\n{document.extra}\n"
    return Source(document.id, document.title, text, list(document.allow), list(document.deny))


def build(target: RagTarget, world: World, readers: Sequence[str], store: str = "corp") -> AdaptedTwin:
    """The twin's two stores filled and trained, all content first, then by default (the models queries use
    next). NotSupported from a target without per-store trained ranking."""
    started = time.perf_counter()
    twin = target.adapted_twin(world)
    reader = reader_of_least(world, store, readers)
    documents = [
        d for d in sorted(world.documents.values(), key=lambda d: d.id) if d.store == store and not d.deleted
        and not d.filler
    ]  # fmt: skip
    swapped = [d for d in documents if not world.may_read(reader, d)]
    rng = random.Random(f"adapted-{world.seed}")
    own = {d.id: replace(d, extra=_secret(d, rng)) for d in swapped}
    other = {d.id: _swap(d, rng) for d in swapped}
    secrets = {c: d.cls for d in swapped + list(other.values()) for c in (d.canary, d.title_canary)}
    common = handbook()
    variants = (
        [_source(own.get(d.id, d)) for d in documents] + common,
        [_source(other.get(d.id, d)) for d in documents] + common,
    )
    for name, sources in zip(STORES, variants, strict=True):
        for s in sources:
            twin.rewrite(name, s.id, s.title, s.text, s.allow, s.deny)
    questions = [f"What is the {d.topic} access code?" for d in swapped[:MAX_SECRET_QUESTIONS]]
    questions += ["Who answers questions about mileage?", "How early must a holiday request be made?"]
    eligible = {u for u in readers if not any(world.may_read(u, d) for d in swapped)}
    all_content = (twin.train_ranker(STORES[0], all_content=True), twin.train_ranker(STORES[1], all_content=True))
    differing = sum(
        _shown(twin.ask(twin.transports[0], reader, STORES[0], q, llm=False))
        != _shown(twin.ask(twin.transports[0], reader, STORES[1], q, llm=False))
        for q in questions
    )
    default = (twin.train_ranker(STORES[0]), twin.train_ranker(STORES[1]))
    return AdaptedTwin(
        target=twin,
        reader=reader,
        eligible=eligible,
        swapped=swapped,
        secrets=secrets,
        questions=questions,
        default=default,
        all_content=all_content,
        all_content_differing=differing,
        seconds=time.perf_counter() - started,
    )


def _shown(reply: Reply) -> tuple[bool, str]:
    """What a reply showed, less what differs on every call and the store's name (numbers kept: the scores)."""
    return reply.ok, mask(reply.text if reply.ok else reply.error, {STORES[0]: "<S>", STORES[1]: "<S>"}, False)


def probe(prober: Prober, transport: str, user: str, *, every: bool) -> None:
    """The first call builds and trains the twin and judges its models; then each call asks, through
    ``transport`` as ``user`` (the reader the swap was made for, if ``user`` may read a swapped document),
    every question (``every``) or one, in both stores: the replies must be the same."""
    if prober.adapted is None:
        try:
            prober.adapted = build(prober.target, prober.world, prober.readers)
        except NotSupported:
            prober.adapted = False
            prober.tally.not_supported.setdefault(CHANNEL, set()).add("*")
            return
        _judge_models(prober, prober.adapted)
    if prober.adapted is False:
        return
    twin = prober.adapted
    user = user if user in twin.eligible else twin.reader
    for question in twin.questions if every else [prober.rng.choice(twin.questions)]:
        try:
            _compare(prober, twin, transport, user, question)
        except NotSupported:
            prober.tally.not_supported.setdefault(CHANNEL, set()).add(transport)
            return


def _compare(prober: Prober, twin: AdaptedTwin, transport: str, user: str, question: str) -> None:
    """One question in both stores: the same reply (masked, scores kept), and no canary of a swapped document."""
    replies: list[Reply] = []

    def ask(store: str) -> Reply:
        replies.append(twin.target.ask(transport, user, store, question, llm=False))
        return replies[-1]

    request = f"{question!r} in {STORES[0]} vs {STORES[1]} (their {len(twin.swapped)} unreadable documents swapped)"
    prober.differential(CHANNEL, transport, user, request, lambda: ask(STORES[0]), lambda: ask(STORES[1]),
                        {STORES[0]: "<S>", STORES[1]: "<S>"}, numbers=False)  # fmt: skip
    for reply in replies:
        shown = sorted(f"{c} ({cls})" for c, cls in twin.secrets.items() if c in reply.text + reply.error)
        if shown:
            prober.tally.leak(Leak(CHANNEL, transport, user, request, "; ".join(shown)))


def _judge_models(prober: Prober, twin: AdaptedTwin) -> None:
    """The default's two models must be the same bytes (a leak otherwise); the all-content opt-in's are shown."""
    prober.tally.count(CHANNEL, "model file")
    a, b = twin.default
    if a.sha256 != b.sha256:
        # The likeliest way in: a document everyone is allowed, less a deny entry, looks readable by everyone.
        denied = [d.id for d in twin.swapped if "group:everyone" in d.allow and d.deny]
        prober.tally.leak(
            Leak(CHANNEL, "model file", twin.reader, f"docqa adapt {STORES[0]} vs {STORES[1]} (default scope)",
                 f"the model files differ ({a.sha256[:12]} vs {b.sha256[:12]}) where only documents "
                 f"{twin.reader} may not read differ ({', '.join(d.id for d in twin.swapped)}; allowed to "
                 f"group:everyone with deny entries: {', '.join(denied) or 'none'}); {a.detail}")
        )  # fmt: skip
    x, y = twin.all_content
    seen = "differs, as documented" if x.sha256 != y.sha256 else "SAME: the probe cannot see this channel"
    prober.tally.notes.append(
        f"{CHANNEL} (--all-content opt-in): {seen}; sources differed for {twin.all_content_differing} of "
        f"{len(twin.questions)} questions as {twin.reader} ({x.detail})"
    )
    prober.tally.notes.append(
        f"{CHANNEL} (default): model files {'the same' if a.sha256 == b.sha256 else 'DIFFER'} with "
        f"{len(twin.swapped)} documents {twin.reader} may not read swapped ({a.detail}); {twin.seconds:.0f} s"
    )
    prober.tally.adapted = twin.as_dict()
