"""The generated world: stores, nested groups, deny entries, admin overrides and a canary per protection class.

The world is the benchmark's ground truth. Every document carries two canaries, one in its text and one in its
title (``CANARY-<CLASS>-<random>``, ``TITLE-<CLASS>-<random>``), and the world answers, for any user at any
moment, which canaries that user may see. The changes made between probes (revocations, rewrites, deletions,
overrides) are applied here as well as to the target, so the truth follows the target.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field

#: The protection classes, each with the documents that hold it (ids relative to their store).
CLASSES = (
    "public",  # readable by everyone: the control (probes must find it, or they are not probing)
    "group",  # a group's only
    "nested",  # a group reached through two levels of nesting
    "denied",  # everyone but a deny entry (a user and a group)
    "override",  # the manifest opens it; an admin override closes it
    "revoked",  # readable until a membership and an ACL entry are revoked between probes
    "rewritten",  # its first version's canary, after a rewrite (and an admin opening it to everyone)
    "deleted",  # deleted between probes
    "store",  # the only document of a store one user may read
    "ldap",  # a group of an LDAP directory's (the directory mode): until its member is removed there
    "scim",  # a group an identity provider provisions over SCIM (the directory mode): until a PATCH removes its member
)

USERS = ("alice", "bob", "carol", "dave", "erin", "vic", "root")
ADMIN = "root"


def _token(rng: random.Random, n: int = 10) -> str:
    return "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(n))


@dataclass
class Document:
    store: str
    id: str
    cls: str
    topic: str  # a distinctive phrase of the document's own: what a question about it says
    allow: list[str]
    deny: list[str] = field(default_factory=list)
    canary: str = ""
    title_canary: str = ""
    version: int = 1
    deleted: bool = False
    #: Canaries of earlier versions (a rewrite): nobody may see them in a new answer.
    retired: list[str] = field(default_factory=list)
    extra: str = ""  # more text (the lexical-statistics and timing probes' terms)
    filler: bool = False  # one of many alike forbidden documents that give the timing probes rows to score

    @property
    def title(self) -> str:
        return f"{self.topic.title()} {self.title_canary}"

    def text(self) -> str:
        if self.version > 1:
            return (
                f"# {self.title}\n\nThe {self.topic} record was revised. Nothing secret is kept in the {self.topic}"
                f" record any longer; ask the owners of the {self.topic} for details.\n"
            )
        return (
            f"# {self.title}\n\nThe {self.topic} record holds one secret. The {self.topic} access code is"
            f" {self.canary}. Keep the {self.topic} code safe and rotate the {self.topic} code every quarter.\n"
            + (f"\n{self.extra}\n" if self.extra else "")
        )


@dataclass
class World:
    """Documents by (store, id), the group directory (groups nest), and what each user may read now."""

    seed: int
    documents: dict[tuple[str, str], Document]
    groups: dict[str, set[str]]  # group id -> members ("user:x" or "group:y")
    stores: tuple[str, ...]
    absent_store: str
    absent_document: str
    absent_terms: list[str]
    #: Two words a readable document holds alike; the first is also in a document few may read (BM25 statistics).
    statistics_terms: tuple[str, str, str] = ("", "", "")  # shared, alone, spare (the control: also alone)
    statistics_store: str = "lab"
    #: Words only forbidden documents hold (the group class and every filler): the term-existence timing probe.
    timing_terms: list[str] = field(default_factory=list)
    #: Canaries each user legitimately received before a change (their own history may keep them).
    received: dict[str, set[str]] = field(default_factory=dict)
    #: Groups kept in an outside directory, not in the service's own tables: group id -> source (ldap, scim).
    directory: dict[str, str] = field(default_factory=dict)

    # -- the truth -------------------------------------------------------------------------------------------
    def principals(self, user: str) -> set[str]:
        found = {f"user:{user}", "group:everyone"}
        changed = True
        while changed:
            changed = False
            for group, members in self.groups.items():
                if f"group:{group}" not in found and members & found:
                    found.add(f"group:{group}")
                    changed = True
        return found

    def may_read(self, user: str, document: Document) -> bool:
        principals = self.principals(user)
        return not document.deleted and bool(principals & set(document.allow)) and not principals & set(document.deny)

    def visible(self, user: str) -> set[str]:
        """The canaries ``user`` may see in a new answer, a listing or a count now."""
        seen: set[str] = set()
        for document in self.documents.values():
            if self.may_read(user, document):
                seen.add(document.title_canary)
                if document.version == 1:
                    seen.add(document.canary)
        return seen

    def visible_in_own_history(self, user: str) -> set[str]:
        """A changed or deleted document's old answer stays visible to the one who asked (told it changed)."""
        kept = set()
        for document in self.documents.values():
            if document.deleted or document.version > 1:
                kept |= {document.canary, document.title_canary} & self.received.get(user, set())
        return self.visible(user) | kept

    def all_canaries(self) -> dict[str, str]:
        """Every canary -> its protection class."""
        out: dict[str, str] = {}
        for document in self.documents.values():
            out[document.canary] = document.cls
            out[document.title_canary] = document.cls
        return out

    def readable_documents(self, user: str, store: str) -> list[Document]:
        return [d for d in self.documents.values() if d.store == store and self.may_read(user, d)]

    def forbidden_documents(self, user: str, filler: bool = False) -> list[Document]:
        """Documents that exist now and ``user`` may not read (``filler``: the filler documents too)."""
        return [
            d
            for d in self.documents.values()
            if not d.deleted and not self.may_read(user, d) and (filler or not d.filler)
        ]

    def probed_documents(self) -> list[Document]:
        """The documents probes aim at: one per class and store, not the fillers."""
        return [d for d in self.documents.values() if not d.filler]

    def by_class(self, cls: str) -> Document:
        return next(d for d in self.documents.values() if d.cls == cls)


TOPICS = {
    "public": "harbour welcome guide",
    "group": "heron budget forecast",
    "nested": "falcon engine prototype",
    "denied": "osprey salary review",
    "override": "kestrel litigation hold",
    "revoked": "merlin acquisition plan",
    "rewritten": "plover pricing sheet",
    "deleted": "tern vendor contract",
    "store": "vault master keys",
    "lab-public": "lark lab handbook",
    "lab-group": "wren grant ledger",
}


#: The directory mode's group of each source and the world user who is its member until the revocation.
DIRECTORY_GROUPS = {"ldap": ("ldap-auditors", "dave"), "scim": ("scim-treasury", "alice")}
DIRECTORY_TOPICS = {"ldap": "egret audit findings", "scim": "gannet treasury mandate"}


def generate(seed: int, filler: int = 0, directory: tuple[str, ...] = ()) -> World:
    """The world of one run: the same seed gives the same world (canaries included); ``filler`` more documents
    of the group class that hold the timing probe's words; ``directory`` (sources: ``ldap``, ``scim``) one more
    document of that source's class each, readable through a group only that source holds."""
    rng = random.Random(seed)
    canary = {key: _token(rng) for key in TOPICS}
    docs = [
        Document("corp", "public/harbour.md", "public", TOPICS["public"], ["group:everyone"]),
        Document("corp", "finance/heron.md", "group", TOPICS["group"], ["group:finance"]),
        Document("corp", "eng/falcon.md", "nested", TOPICS["nested"], ["group:engineering"]),
        Document(
            "corp", "hr/osprey.md", "denied", TOPICS["denied"], ["group:everyone"], ["user:bob", "group:contractors"]
        ),
        Document("corp", "legal/kestrel.md", "override", TOPICS["override"], ["group:everyone"]),
        Document("corp", "projects/merlin.md", "revoked", TOPICS["revoked"], ["group:project-x"]),
        Document("corp", "ops/plover.md", "rewritten", TOPICS["rewritten"], ["group:finance"]),
        Document("corp", "ops/tern.md", "deleted", TOPICS["deleted"], ["group:everyone"]),
        Document("lab", "lab/lark.md", "public", TOPICS["lab-public"], ["group:everyone"]),
        Document("lab", "lab/wren.md", "group", TOPICS["lab-group"], ["group:finance"]),
        Document("vault", "vault/keys.md", "store", TOPICS["store"], ["user:vic"]),
    ]
    keys = list(TOPICS)
    for key, document in zip(keys[:8] + keys[9:11] + keys[8:9], docs, strict=True):
        cls = document.cls.upper()
        document.canary = f"CANARY-{cls}-{canary[key]}"
        document.title_canary = f"TITLE-{cls}-{_token(rng, 6)}"
    groups = {
        "finance": {"user:carol"},
        "engineering": {"group:platform"},
        "platform": {"group:core"},
        "core": {"user:alice"},  # alice reads falcon through core -> platform -> engineering
        "contractors": {"user:dave"},
        "project-x": {"user:erin", "user:bob"},
        "legal": {"user:carol"},
    }
    shared, alone, spare = (f"{p}{_token(rng, 6).lower()}" for p in ("zeph", "quor", "vimt"))
    # The statistics probe asks for both words, then plants a document nobody but vic may read holding the first
    # many times and asks again: with statistics over what the caller may read nothing moves; with statistics
    # over every row the planted rows lower the first word's weight and the pipit notes overtake the lark handbook.
    pipit = Document("lab", "lab/pipit.md", "public", "pipit field notes", ["group:everyone"])
    pipit.canary, pipit.title_canary = f"CANARY-PUBLIC-{_token(rng)}", f"TITLE-PUBLIC-{_token(rng, 6)}"
    docs.append(pipit)
    for document in docs:
        if document.id == "lab/lark.md":
            document.extra = f"The lark handbook names {shared} and {shared} again, and {spare} once."
        elif document.id == "lab/pipit.md":
            document.extra = f"The pipit field notes name {alone} once."
    timing_terms = [f"tm{_token(rng, 8).lower()}" for _ in range(8)]
    docs[1].extra = "Archive keys: " + " ".join(timing_terms) + "."
    for i in range(filler):
        document = Document("corp", f"finance/archive/{i:04d}.md", "group", f"heron archive {i}", ["group:finance"])
        document.canary, document.title_canary = f"CANARY-GROUP-{_token(rng)}", f"TITLE-GROUP-{_token(rng, 6)}"
        document.extra, document.filler = "Archive keys: " + " ".join(timing_terms) + ".", True
        docs.append(document)
    outside: dict[str, str] = {}
    # Drawn last (and from their own generator) so that a world without them has the same canaries.
    extra = random.Random(f"directory-{seed}")
    for source in directory:
        group, member = DIRECTORY_GROUPS[source]
        document = Document("corp", f"{source}/{group}.md", source, DIRECTORY_TOPICS[source], [f"group:{group}"])
        cls = source.upper()
        document.canary, document.title_canary = f"CANARY-{cls}-{_token(extra)}", f"TITLE-{cls}-{_token(extra, 6)}"
        docs.append(document)
        groups[group] = {f"user:{member}"}
        outside[group] = source
    return World(
        directory=outside,
        timing_terms=timing_terms,
        statistics_terms=(shared, alone, spare),
        seed=seed,
        documents={(d.store, d.id): d for d in docs},
        groups=groups,
        stores=("corp", "lab", "vault"),
        absent_store=f"nostore{_token(rng, 5).lower()}",
        absent_document=f"finance/{_token(rng, 6).lower()}.md",
        absent_terms=[f"CANARY-GROUP-{_token(rng)}" for _ in range(64)],
    )
