"""The probes: every output channel, asked as every user, judged against the world's truth.

A leak is (1) a canary the caller may not see now anywhere in what a call showed it (body, error, count), or
(2) a reply that differs between a forbidden thing and an absent one (a document id, a store, a filter), once
ids and numbers that differ on every call are masked, or (3) for counts, a number larger than what the caller
may read. Timings are judged statistically in :mod:`bench.leakage.timing`.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from bench.leakage.adapter import Filter, NotSupported, RagTarget, Reply
from bench.leakage.world import ADMIN, Document, World

if TYPE_CHECKING:
    from bench.leakage.adapted import AdaptedTwin

#: Every channel the benchmark reports, in table order.
CHANNELS = (
    "answers", "chunks", "streams", "documents", "pickers", "counts", "listings", "filters", "summaries",
    "comparisons", "history", "conversations", "follow-ups", "feedback", "export", "errors", "statistics",
    "adapted model",
)  # fmt: skip
READERS = ("alice", "bob", "carol", "dave", "erin", "vic")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_NUMBER = re.compile(r"\d+(\.\d+)?(e-?\d+)?")
_VOLATILE = re.compile(
    r'"(timingsMs|queryId|conversationId|createdAt|ratedAt|timings_ms|query_id|conversation_id|created_at|rated_at)":'
    r'\s*(\[[^\]]*\]|\{[^}]*\}|"[^"]*")'
)
_PROTO_VOLATILE = re.compile(r'timings_ms \{[^}]*\}|(query_id|conversation_id|created_at|rated_at): "[^"]*"')


@dataclass
class Leak:
    channel: str
    transport: str
    user: str
    request: str
    what: str

    def as_dict(self) -> dict[str, str]:
        return vars(self).copy()


@dataclass
class Tally:
    probes: dict[str, int] = field(default_factory=dict)
    leaks: dict[str, list[Leak]] = field(default_factory=dict)
    transports: dict[str, set[str]] = field(default_factory=dict)
    not_supported: dict[str, set[str]] = field(default_factory=dict)
    control_asked: int = 0  # probes of content the caller may read ...
    control_found: int = 0  # ... that showed its canary (the probes reach the content)
    inconclusive: int = 0  # statistics probes whose control pair differed already
    notes: list[str] = field(default_factory=list)  # outcomes shown, not counted (the adapted model's opt-in)
    adapted: dict[str, Any] = field(default_factory=dict)  # the adapted-model probe's models

    def count(self, channel: str, transport: str) -> None:
        self.probes[channel] = self.probes.get(channel, 0) + 1
        self.transports.setdefault(channel, set()).add(transport)

    def leak(self, leak: Leak) -> None:
        self.leaks.setdefault(leak.channel, []).append(leak)

    @property
    def total(self) -> int:
        return sum(self.probes.values())


def mask(text: str, replace: dict[str, str], numbers: bool = True) -> str:
    """A reply without what differs on every call (ids, timings; ``numbers``: every number) or names the thing
    asked about (``replace``)."""
    text = _PROTO_VOLATILE.sub("<V>", _VOLATILE.sub(r'"\1":<V>', text))
    for old, new in sorted(replace.items(), key=lambda kv: -len(kv[0])):
        if old:
            text = text.replace(old, new)
    text = _UUID.sub("<ID>", text)
    return _NUMBER.sub("<N>", text) if numbers else text


class Prober:
    """Runs probes against a target and judges them against the world."""

    def __init__(self, target: RagTarget, world: World, rng: random.Random) -> None:
        self.target, self.world, self.rng = target, world, rng
        self.tally = Tally()
        self.conversations: dict[str, str] = {}  # user -> a conversation of theirs about content later revoked
        self.statistics_ready: bool | None = None
        self.planted = 0  # documents the statistics probe planted (and removed) so far
        self.readers = READERS
        self.adapted: AdaptedTwin | Literal[False] | None = None  # None: not built yet; False: not offered

    # -- judging ---------------------------------------------------------------------------------------------
    def scan(
        self,
        channel: str,
        transport: str,
        user: str,
        request: str,
        reply: Reply,
        *,
        allowed: set[str] | None = None,
        sent: tuple[str, ...] = (),
        ids: list[Document] | None = None,
    ) -> None:
        """Count one probe; record a leak for every canary (or forbidden document id) the caller may not see."""
        self.tally.count(channel, transport)
        may_see = self.world.visible(user) if allowed is None else allowed
        text = reply.text + "\n" + reply.error
        for echoed in sent:  # what the caller itself sent is not a leak when the reply repeats it
            text = text.replace(echoed, "")
        found = sorted(
            f"{canary} ({cls})" for canary, cls in self.world.all_canaries().items() if canary in text
            and canary not in may_see
        )  # fmt: skip
        for document in ids or ():
            if f'"{document.id}"' in text or f"'{document.id}'" in text:
                found.append(f"document id {document.id} ({document.cls})")
        if found:
            self.tally.leak(Leak(channel, transport, user, request, "; ".join(found)))

    def control(self, user: str, document: Document, reply: Reply) -> None:
        """A probe of a document the caller may read: did it reach the canary?"""
        if self.world.may_read(user, document) and document.version == 1:
            self.tally.control_asked += 1
            self.tally.control_found += document.canary in reply.text

    def differential(
        self,
        channel: str,
        transport: str,
        user: str,
        request: str,
        forbidden: Callable[[], Reply],
        absent: Callable[[], Reply],
        replace: dict[str, str],
        numbers: bool = True,
    ) -> None:
        """Ask about a forbidden thing and an absent one: the caller must not be able to tell them apart."""
        first, second = forbidden(), absent()
        self.tally.count(channel, transport)
        self.tally.count(channel, transport)
        a = (first.ok, mask(first.error if not first.ok else first.text, replace, numbers))
        b = (second.ok, mask(second.error if not second.ok else second.text, replace, numbers))
        if a != b:
            self.tally.leak(Leak(channel, transport, user, request, _difference(a, b)))

    def call(self, channel: str, transport: str, make: Callable[[], Reply]) -> Reply | None:
        try:
            return make()
        except NotSupported:
            self.tally.not_supported.setdefault(channel, set()).add(transport)
            return None

    # -- probes ----------------------------------------------------------------------------------------------
    def question(self, document: Document) -> str:
        suffix = document.canary.rsplit("-", 1)[-1]
        return self.rng.choice(
            [
                f"What is the {document.topic} access code?",
                f"{document.topic} secret code",
                f"Which record mentions {suffix}?",
                f"What does {document.title_canary.rsplit('-', 1)[-1]} say about the {document.topic}?",
            ]
        )

    def target_document(self, user: str) -> Document:
        """Mostly a document the user may not read (or one that changed), sometimes one they may (control)."""
        documents = self.world.probed_documents()
        forbidden = [d for d in documents if not self.world.may_read(user, d) or d.version > 1]
        pool = forbidden if forbidden and self.rng.random() < 0.8 else documents
        return self.rng.choice(pool)

    def probe_answers(self, transport: str, user: str, *, llm: bool, stream: bool = False) -> None:
        document = self.target_document(user)
        question = self.question(document)
        channel = "streams" if stream else ("answers" if llm else "chunks")
        how = self.rng.choice(["store", "documents", "document"])
        kwargs: dict[str, Any] = {}
        if how == "documents":
            public = self.world.by_class("public")
            kwargs["documents"] = [document.id] + ([public.id] if document.store == public.store else [])
        elif how == "document":
            kwargs["document"] = document.id
        reply = self.call(
            channel,
            transport,
            lambda: self.target.ask(transport, user, document.store, question, llm=llm, stream=stream, **kwargs),
        )
        if reply is None:
            return
        self.scan(channel, transport, user, f"{how} {document.store}: {question!r} {kwargs}", reply)
        self.control(user, document, reply)

    def probe_listing(self, transport: str, user: str, *, picker: bool) -> None:
        store = self.rng.choice(self.world.stores)
        forbidden = [d for d in self.world.forbidden_documents(user) if d.store == store]
        search = None
        if picker:
            document = self.rng.choice(forbidden or self.world.probed_documents())
            search = self.rng.choice([document.topic.split()[0], document.title_canary, document.id.split("/")[0]])
        channel = "pickers" if picker else "documents"
        reply = self.call(channel, transport, lambda: self.target.documents(transport, user, store, search))
        if reply is None:
            return
        deleted = [d for d in self.world.documents.values() if d.store == store and d.deleted]
        hidden = [d for d in self.world.forbidden_documents(user, filler=True) if d.store == store]
        self.scan(channel, transport, user, f"documents({store}, search={search!r})", reply, ids=hidden + deleted)

    def probe_stores(self, transport: str, user: str) -> None:
        reply = self.call("counts", transport, lambda: self.target.stores(transport, user))
        if reply is None:
            return
        self.scan("listings", transport, user, "stores", reply)
        self.tally.count("counts", transport)
        for store in self.world.stores:
            readable = len(self.world.readable_documents(user, store))
            shown = _store_count(reply.text, store)
            if readable == 0 and shown is not None:
                self.tally.leak(Leak("listings", transport, user, "stores", f"store {store} listed, none readable"))
            if shown is not None and shown > readable:
                self.tally.leak(
                    Leak("counts", transport, user, "stores", f"{store}: {shown} documents, {readable} readable")
                )

    def probe_filter(self, transport: str, user: str) -> None:
        forbidden = self.world.forbidden_documents(user)
        if not forbidden:
            return
        document = self.rng.choice(forbidden)
        absent_title = self.rng.choice(self.world.absent_terms).replace("CANARY", "TITLE")
        if self.rng.random() < 0.5:
            folder = document.id.split("/")[0] + "/"
            pair = (Filter(path_prefix=document.id), Filter(path_prefix=folder + "zz-absent-"))
            replace = {document.id: "<P>", folder + "zz-absent-": "<P>"}
        else:
            pair = (Filter(title_contains=document.title_canary), Filter(title_contains=absent_title))
            replace = {document.title_canary: "<P>", absent_title: "<P>"}
        question = f"{document.topic} access code"
        llm = self.rng.random() < 0.5
        replies: list[Reply] = []

        def ask(f: Filter) -> Reply:
            reply = self.target.ask(transport, user, document.store, question, filter=f, llm=llm)
            replies.append(reply)
            return reply

        try:
            self.differential("filters", transport, user, f"{question!r} filter={pair[0]}", lambda: ask(pair[0]),
                              lambda: ask(pair[1]), replace)  # fmt: skip
        except NotSupported:
            self.tally.not_supported.setdefault("filters", set()).add(transport)
            return
        sent = (document.title_canary, absent_title)
        self.scan("filters", transport, user, f"{question!r} filter={pair[0]}", replies[0], sent=sent)

    def probe_analysis(self, transport: str, user: str, *, compare: bool) -> None:
        forbidden = [d for d in self.world.forbidden_documents(user) if d.store == "corp"]
        if not forbidden:
            return
        document = self.rng.choice(forbidden)
        absent = self.world.absent_document
        public = self.world.by_class("public")
        channel = "comparisons" if compare else "summaries"
        if compare:

            def make(doc_id: str) -> Callable[[], Reply]:
                return lambda: self.target.compare(transport, user, "corp", [public.id, doc_id])
        else:

            def make(doc_id: str) -> Callable[[], Reply]:
                return lambda: self.target.summarize(transport, user, "corp", doc_id)

        reply = self.call(channel, transport, make(document.id))
        if reply is None:
            return
        self.scan(channel, transport, user, f"{channel} {document.id}", reply)
        self.differential("errors", transport, user, f"{channel} {document.id} vs {absent}", make(document.id),
                          make(absent), {document.id: "<DOC>", absent: "<DOC>"})  # fmt: skip

    def probe_id_errors(self, transport: str, user: str) -> None:
        """documentQuery / multiDocumentQuery of a forbidden id vs an absent one; a hidden store vs an unknown one."""
        world = self.world
        if self.rng.random() < 0.5 and user != "vic":
            hidden, absent = "vault", world.absent_store
            kind = self.rng.choice(["ask", "documents", "summarize"])

            def make(store: str) -> Callable[[], Reply]:
                if kind == "ask":
                    return lambda: self.target.ask(transport, user, store, "vault master keys code", llm=False)
                if kind == "documents":
                    return lambda: self.target.documents(transport, user, store)
                return lambda: self.target.summarize(transport, user, store, "vault/keys.md")

            try:
                self.differential("errors", transport, user, f"{kind} in store vault vs {absent}", make(hidden),
                                  make(absent), {hidden: "<S>", absent: "<S>"})  # fmt: skip
            except NotSupported:
                self.tally.not_supported.setdefault("errors", set()).add(transport)
            return
        forbidden = [d for d in world.forbidden_documents(user) if d.store == "corp"]
        if not forbidden:
            return
        document = self.rng.choice(forbidden)
        absent_id = world.absent_document
        multi = self.rng.random() < 0.5

        def query(doc_id: str) -> Callable[[], Reply]:
            if multi:
                return lambda: self.target.ask(transport, user, "corp", "access code", documents=[doc_id], llm=False)
            return lambda: self.target.ask(transport, user, "corp", "access code", document=doc_id, llm=False)

        self.differential("errors", transport, user, f"{'multi' if multi else 'document'}Query {document.id} vs absent",
                          query(document.id), query(absent_id), {document.id: "<DOC>", absent_id: "<DOC>"})  # fmt: skip

    def probe_history(self, transport: str, user: str) -> None:
        reply = self.call("history", transport, lambda: self.target.history(transport, user))
        if reply is not None:
            self.scan("history", transport, user, "history", reply, allowed=self.world.visible_in_own_history(user))
        conversation = self.conversations.get(user)
        if conversation:
            reply = self.call(
                "conversations", transport, lambda: self.target.conversation(transport, user, conversation)
            )
            if reply is not None:
                self.scan("conversations", transport, user, f"conversation {conversation}", reply,
                          allowed=self.world.visible_in_own_history(user))  # fmt: skip
        # Someone else's conversation id vs an unknown one.
        others = [(u, c) for u, c in self.conversations.items() if u != user]
        if others:
            owner, other = self.rng.choice(others)
            unknown = "00000000-0000-4000-8000-000000000000"
            self.differential("conversations", transport, user, f"{owner}'s conversation vs unknown",
                              lambda: self.target.conversation(transport, user, other),
                              lambda: self.target.conversation(transport, user, unknown),
                              {other: "<C>", unknown: "<C>"})  # fmt: skip

    def probe_follow_up(self, transport: str, user: str) -> None:
        conversation = self.conversations.get(user)
        if not conversation:
            return
        question = self.rng.choice(["And what was that code again?", "Repeat the code, please.", "What did it say?"])
        reply = self.call(
            "follow-ups",
            transport,
            lambda: self.target.ask(transport, user, "corp", question, conversation=conversation, llm=True),
        )
        if reply is not None:
            self.scan("follow-ups", transport, user, f"follow-up {question!r} in {conversation}", reply)

    def probe_feedback(self, transport: str, user: str) -> None:
        store = self.rng.choice(["corp", "lab"])
        reply = self.call("feedback", transport, lambda: self.target.feedback(transport, user, store))
        if reply is not None:
            self.scan("feedback", transport, user, f"feedback({store})", reply)

    def probe_export(self, user: str) -> None:
        store = self.rng.choice(["corp", "lab"])
        reply = self.call("export", "cli", lambda: self.target.export(user, store))
        if reply is not None:
            forbidden = [d for d in self.world.forbidden_documents(user, filler=True) if d.store == store]
            self.scan("export", "cli", user, f"export({store})", reply, ids=forbidden)

    def probe_statistics(self, transport: str, user: str) -> None:
        """The caller's lexical ranking before and after a document they may not read, holding one of the
        question's words many times, is added: the same unless unreadable rows count in the ranking's statistics
        (the same question both times, so the embedding and every cosine are the same)."""
        store = self.world.statistics_store
        shared, alone, _spare = self.world.statistics_terms
        if not shared or self.statistics_ready is False:
            return
        if self.statistics_ready is None:
            try:
                self.target.rank_lexically(store)
                self.statistics_ready = True
            except NotSupported:
                self.statistics_ready = False
                self.tally.not_supported.setdefault("statistics", set()).add("*")
                return
        readers = [u for u in READERS if u != "vic"]
        user = user if user in readers else self.rng.choice(readers)
        question = f"{shared} {alone}"
        self.planted += 1
        planted = f"lab/planted-{self.planted:04d}.md"

        def after() -> Reply:
            text = "# Planted ledger\n\n" + " ".join([shared] * 40) + "\n"
            self.target.rewrite(store, planted, "Planted ledger", text, ["user:vic"], [])
            try:
                return self.target.ask(transport, user, store, question, llm=False)
            finally:
                self.target.delete(store, planted)

        try:
            self.differential(
                "statistics", transport, user,
                f"lexical ranking in {store} for {question!r} before / after an unreadable document holding {shared}",
                lambda: self.target.ask(transport, user, store, question, llm=False), after, {}, numbers=False,
            )  # fmt: skip
        except NotSupported:
            self.tally.not_supported.setdefault("statistics", set()).add(transport)

    def probe_adapted(self, transport: str, user: str, *, every: bool = False) -> None:
        """The store's own trained ranking model (:mod:`bench.leakage.adapted`; it imports this module)."""
        from bench.leakage.adapted import probe

        probe(self, transport, user, every=every)

    def sweep(self) -> None:
        """Every channel through every transport at least once (as a random reader; feedback as the admin)."""
        for transport in self.target.transports:
            user = self.rng.choice(READERS)
            self.probe_answers(transport, user, llm=True)
            self.probe_answers(transport, user, llm=False)
            self.probe_answers(transport, user, llm=True, stream=True)
            self.probe_listing(transport, user, picker=False)
            self.probe_listing(transport, user, picker=True)
            self.probe_stores(transport, user)
            self.probe_filter(transport, user)
            self.probe_analysis(transport, user, compare=False)
            self.probe_analysis(transport, user, compare=True)
            self.probe_id_errors(transport, user)
            for owner in self.conversations:
                self.probe_history(transport, owner)
                self.probe_follow_up(transport, owner)
            self.probe_feedback(transport, ADMIN)
            self.probe_statistics(transport, user)
            self.probe_adapted(transport, user, every=transport != "cli")  # the CLI: one question (a process each)
        self.probe_export(ADMIN)

    # -- the mix ---------------------------------------------------------------------------------------------
    def one(self, cli_share: float) -> None:
        """One randomly chosen probe (a few requests); the CLI is slow, so it gets ``cli_share`` of them."""
        transports = [t for t in self.target.transports if t != "cli"]
        transport = (
            "cli" if "cli" in self.target.transports and self.rng.random() < cli_share else self.rng.choice(transports)
        )
        user = self.rng.choice(READERS)
        kind = self.rng.choices(
            ["answers", "chunks", "streams", "documents", "pickers", "stores", "filters", "summaries",
             "comparisons", "ids", "history", "follow-ups", "feedback", "export", "statistics", "adapted"],
            weights=[6, 6, 3, 2, 2, 2, 3, 2, 2, 3, 2, 2, 1, 1 if transport == "cli" else 0, 1, 1],
        )[0]  # fmt: skip
        if kind in ("answers", "chunks", "streams"):
            self.probe_answers(transport, user, llm=kind != "chunks", stream=kind == "streams")
        elif kind in ("documents", "pickers"):
            self.probe_listing(transport, user, picker=kind == "pickers")
        elif kind == "stores":
            self.probe_stores(transport, user)
        elif kind == "filters":
            self.probe_filter(transport, user)
        elif kind in ("summaries", "comparisons"):
            self.probe_analysis(transport, user, compare=kind == "comparisons")
        elif kind == "ids":
            self.probe_id_errors(transport, user)
        elif kind == "history":
            self.probe_history(transport, user)
        elif kind == "follow-ups":
            self.probe_follow_up(transport, user)
        elif kind == "feedback":
            self.probe_feedback(transport, self.rng.choice([ADMIN, ADMIN, user]))
        elif kind == "export":
            self.probe_export(ADMIN)
        elif kind == "statistics":
            self.probe_statistics(transport, user)
        elif kind == "adapted":
            self.probe_adapted(transport, user)


def _difference(a: tuple[bool, str], b: tuple[bool, str]) -> str:
    """Where the forbidden reply and the absent one part (a little context of each)."""
    if a[0] != b[0]:
        return (
            f"forbidden {'ok' if a[0] else 'error'}: {a[1][:200]!r}; absent {'ok' if b[0] else 'error'}: {b[1][:200]!r}"
        )
    at = next((i for i, (x, y) in enumerate(zip(a[1], b[1], strict=False)) if x != y), min(len(a[1]), len(b[1])))
    start = max(at - 60, 0)
    return f"forbidden: ...{a[1][start : at + 80]!r}; absent: ...{b[1][start : at + 80]!r}"


def _store_count(text: str, store: str) -> int | None:
    """The document count a stores listing shows for ``store`` (None: not listed)."""
    try:
        payload = json.loads(text)
    except json.JSONDecodeError:
        payload = None
    if isinstance(payload, dict):
        for item in (payload.get("data") or {}).get("stores") or []:
            if item.get("id") == store:
                return int(item.get("documents") or 0)
        return None
    for block in text.split("stores {")[1:]:  # protobuf text: a zero count is not printed
        if re.search(rf'^\s*id: "{re.escape(store)}"$', block, re.M):
            match = re.search(r"^\s*documents: (\d+)$", block, re.M)
            return int(match.group(1)) if match else 0
    return None


def timed(make: Callable[[], Reply]) -> Reply:
    started = time.perf_counter()
    reply = make()
    if not reply.wall_ms:
        reply.wall_ms = (time.perf_counter() - started) * 1e3
    return reply
