"""A user's history of answered queries, their conversations and their ratings: the rules, once.

An entry is what one query left behind: the question as asked, the question searched, the answer and the
sources it cited, with the version of every document its text draws on (``versions``). It belongs to its
user alone. What a reader is shown of it is decided when it is read (``shown``): every cited document is
checked against the ACL in force today and against its version today. An entry that cited a document its
reader cannot read loses its answer text (and its rating's comment) and that source, and says so; an entry
whose documents changed since keeps its answer for its asker alone, marked ``changed``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

from acl.errors import InvalidArgument, NotFound

Rating = Literal["UP", "DOWN"]
RATINGS: tuple[Rating, ...] = ("UP", "DOWN")
#: The longest comment a rating may carry, in characters.
MAX_COMMENT_CHARS = 2000
#: Entries per page: the default and the most one page holds.
DEFAULT_PAGE = 20
MAX_PAGE = 100
#: The one message for a query or conversation that is unknown or another user's: the two read the same.
NO_SUCH_QUERY = "query not found"
NO_SUCH_CONVERSATION = "conversation not found"
#: What a server-minted id looks like (a UUID); anything else is unknown by construction.
_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
#: Why an answer (and its rating's comment) is withheld from its reader: shown in every view and the export.
WITHHELD_REVOKED = "withheld: a cited document is no longer readable"
WITHHELD_UNREADABLE = "withheld: you cannot read a cited document"
WITHHELD_CHANGED = "withheld: a cited document has changed since this answer"
#: What the asker is told of their own answer when a document it quoted changed (or went) since.
CHANGED_NOTE = "a cited document has changed since this answer: it quotes an earlier version"


@dataclass(frozen=True, slots=True)
class CitedSource:
    """One chunk an answer cited: where it is, and how it scored."""

    document_id: str
    chunk_id: str
    title: str
    score: float | None
    relevance: float | None


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One answered query as its user's history keeps it (the audit log keeps no text; this does)."""

    query_id: str
    user_id: str
    store_id: str
    query_class: str
    conversation_id: str
    question: str
    rewritten_question: str | None
    answer: str | None
    sources: tuple[CitedSource, ...]
    level: float | None
    threshold: float | None
    created_at: datetime
    #: The documents (of the same store) behind the earlier answers of its conversation that its prompt
    #: quoted, and behind what those quoted, and so on: the answer text may restate any of them.
    quoted_document_ids: tuple[str, ...] = ()
    #: The version (the catalog's content hash) of every document in ``depends_on`` as the answer quoted it,
    #: sorted by document id; "" for a version that could not be told. None: kept before versions were
    #: (revision 0006), so never current.
    versions: tuple[tuple[str, str], ...] | None = None

    @property
    def document_ids(self) -> tuple[str, ...]:
        """The cited documents, each once, in citation order."""
        return tuple(dict.fromkeys(s.document_id for s in self.sources))

    @property
    def depends_on(self) -> tuple[str, ...]:
        """Every document the answer text may draw on: the cited ones, then those behind the quoted turns."""
        return tuple(dict.fromkeys((*self.document_ids, *self.quoted_document_ids)))

    def current(self, today: Mapping[str, str]) -> bool:
        """Whether every document the answer draws on is, in ``today``'s versions (document id -> content hash
        of the documents that exist now), still the version it quoted."""
        if self.versions is None:
            return False
        quoted = dict(self.versions)
        return all(quoted.get(d) and today.get(d) == quoted[d] for d in self.depends_on)


def merged_versions(*parts: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """One entry's versions from several reads of them: a document read in two different versions gets ""
    (it is never current, so the answer is withheld from everyone but its asker)."""
    out: dict[str, str] = {}
    for part in parts:
        for document, version in part.items():
            out[document] = version if out.get(document, version) == version else ""
    return tuple(sorted(out.items()))


@dataclass(frozen=True, slots=True)
class ShownEntry:
    """An entry as its reader may see it today: ``sources_revoked`` when a cited document is not readable by
    them, and then without that document's sources; ``changed`` when a document it quoted changed or went
    since (told to a reader who may read them all); ``withheld`` why the answer text and the rating's comment
    are left out (None when they are shown)."""

    entry: HistoryEntry
    sources_revoked: bool
    rating: Feedback | None = None
    changed: bool = False
    withheld: str | None = None

    @property
    def comment(self) -> str | None:
        """The rating's comment as this reader may see it ("" when withheld); None when not rated."""
        return None if self.rating is None else self.rating.comment


@dataclass(frozen=True, slots=True)
class Feedback:
    """A user's rating of one of their own answers; a later rating replaces it."""

    query_id: str
    user_id: str
    store_id: str
    rating: Rating
    comment: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Position:
    """Where a page ends: the newest-first order is (created_at, query_id) descending."""

    created_at: datetime
    query_id: str

    def cursor(self) -> str:
        """The opaque cursor of this position (URL-safe base64 of a small JSON array)."""
        raw = json.dumps([self.created_at.isoformat(), self.query_id], separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @staticmethod
    def of(entry: HistoryEntry) -> Position:
        return Position(entry.created_at, entry.query_id)


def parse_cursor(cursor: str | None) -> Position | None:
    """The position a cursor names; None for none; InvalidArgument for anything not made by ``cursor``."""
    if cursor is None or cursor == "":
        return None
    try:
        if not isinstance(cursor, str) or len(cursor) > 400:
            raise ValueError
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        when, query_id = json.loads(raw)
        created = datetime.fromisoformat(when)
        if not isinstance(query_id, str) or created.tzinfo is None:
            raise ValueError
        created = created.astimezone(UTC)  # an instant past year 9999 or before year 1 in UTC overflows here
    except (ValueError, TypeError, OverflowError, binascii.Error, UnicodeDecodeError):
        raise InvalidArgument("invalid cursor: pass back an endCursor / next_page_token unchanged") from None
    return Position(created, query_id)


def page_size(first: Any) -> int:
    """``first`` checked: 1 to MAX_PAGE; None = DEFAULT_PAGE."""
    if first is None:
        return DEFAULT_PAGE
    if isinstance(first, bool) or not isinstance(first, int) or not 1 <= first <= MAX_PAGE:
        raise InvalidArgument(f"first / page_size must be between 1 and {MAX_PAGE}")
    return first


def known_id(value: Any, what: Literal["query", "conversation"]) -> str:
    """``value`` if it can be an id DocQA minted, else NotFound (the same words as an unknown one)."""
    if isinstance(value, str) and _ID.match(value):
        return value
    raise NotFound(NO_SUCH_QUERY if what == "query" else NO_SUCH_CONVERSATION)


def parse_rating(rating: Any, comment: Any) -> tuple[Rating, str]:
    """A rating (UP or DOWN, any case) and a comment of at most MAX_COMMENT_CHARS; InvalidArgument otherwise."""
    word = rating.upper() if isinstance(rating, str) else rating
    if word not in RATINGS:
        raise InvalidArgument("rating must be UP or DOWN")
    text = "" if comment is None else comment
    if not isinstance(text, str) or len(text) > MAX_COMMENT_CHARS:
        raise InvalidArgument(f"comment must be text of at most {MAX_COMMENT_CHARS} characters")
    if "\x00" in text:
        raise InvalidArgument("comment must not contain NUL characters")
    return word, text


def shown(entry: HistoryEntry, readable: Iterable[str], *, current: bool = False, owner: bool = False) -> ShownEntry:
    """``entry`` as a reader who may read exactly ``readable`` of its documents sees it today.

    ``current``: every document it draws on is still the version it quoted (``HistoryEntry.current``);
    ``owner``: the reader is its asker. The answer is shown only when the reader may read every document it
    draws on, and, to anyone but its asker, only when they are all still the version quoted: a reader who may
    read a document today never learns through history what it said before. Its asker is told that it changed.
    """
    allowed = frozenset(readable)
    revoked = not all(d in allowed for d in entry.depends_on)
    # "changed" of a document the reader cannot read would say something about it: told only otherwise.
    changed = not current and not revoked
    if revoked:
        reason: str | None = WITHHELD_REVOKED if owner else WITHHELD_UNREADABLE
    else:
        reason = WITHHELD_CHANGED if changed and not owner else None
    if reason is None:
        return ShownEntry(entry, sources_revoked=False, changed=changed)
    kept = tuple(s for s in entry.sources if s.document_id in allowed)
    quoted = tuple(d for d in entry.quoted_document_ids if d in allowed)
    versions = None if entry.versions is None else tuple(v for v in entry.versions if v[0] in allowed)
    return ShownEntry(
        replace(entry, answer=None, sources=kept, quoted_document_ids=quoted, versions=versions),
        sources_revoked=revoked,
        changed=changed,
        withheld=reason,
    )


def rated(entry: ShownEntry, rating: Feedback | None) -> ShownEntry:
    """``entry`` with its rating; the comment, part of the answer it rates, withheld with it ("")."""
    if rating is not None and entry.withheld is not None:
        rating = replace(rating, comment="")
    return replace(entry, rating=rating)
