"""The one class a RAG service implements to be measured: :class:`RagTarget`.

Every probe goes through these methods and reads only what they return: a :class:`Reply` holding everything
the caller was shown (body, error, timings), serialised as text. A method the service has no equivalent of
raises :class:`NotSupported`, and its channel is reported as not probed rather than as passing.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.leakage.world import World


class NotSupported(Exception):
    """The target has no such operation (the channel is reported as not probed)."""


@dataclass
class Reply:
    """What one call showed its caller."""

    text: str  # the whole response as the caller received it (JSON, protobuf text, CLI output)
    ok: bool  # False: an error reply; ``error`` is what the caller was told (code and message)
    error: str = ""
    wall_ms: float = 0.0  # measured by the benchmark around the call
    timings_ms: dict[str, float] = field(default_factory=dict)  # timings the service itself reported
    query_id: str = ""
    conversation_id: str = ""


@dataclass(frozen=True)
class TrainedModel:
    """A store's own ranking model as a training run installed it (the "adapted model" channel)."""

    sha256: str  # of the installed model file ("" when the service does not show it)
    detail: str = ""  # what it learned from and how it ranks, in words (for the report)


@dataclass(frozen=True)
class Filter:
    """Metadata conditions of a query (each target maps what it supports)."""

    path_prefix: str | None = None
    title_contains: str | None = None


class RagTarget(abc.ABC):
    """A RAG service under test: builds the world, answers probes, applies changes.

    ``transport`` is one of :attr:`transports` (DocQA: ``graphql``, ``grpc``, ``cli``). ``user`` is a user id
    of the world; the target authenticates as that user however it does (DocQA: a minted bearer token).
    """

    name: str = "target"
    transports: tuple[str, ...] = ()
    #: Outside directories the target reads groups from (DocQA: ``ldap``, ``scim``): the world then holds a
    #: group and a document per source, and :meth:`start` puts that group in that directory, not in the
    #: service's own tables.
    directory_sources: tuple[str, ...] = ()

    # -- life cycle ------------------------------------------------------------------------------------------
    @abc.abstractmethod
    def start(self, world: World) -> None:
        """Index every document of ``world`` with its ACL and groups, then start the service (live)."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop the service and remove what :meth:`start` created."""

    # -- what callers read -----------------------------------------------------------------------------------
    @abc.abstractmethod
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
        """A question over the store, chosen documents or one document; ``llm`` False: the chunks only."""

    @abc.abstractmethod
    def documents(self, transport: str, user: str, store: str, search: str | None = None) -> Reply:
        """The documents the user may pick from (a listing or a picker with a search)."""

    @abc.abstractmethod
    def stores(self, transport: str, user: str) -> Reply:
        """The stores the user sees, with their counts."""

    @abc.abstractmethod
    def summarize(self, transport: str, user: str, store: str, document: str) -> Reply:
        """A summary of one document."""

    @abc.abstractmethod
    def compare(self, transport: str, user: str, store: str, documents: list[str]) -> Reply:
        """A comparison of several documents."""

    @abc.abstractmethod
    def history(self, transport: str, user: str) -> Reply:
        """The user's own answered queries."""

    @abc.abstractmethod
    def conversation(self, transport: str, user: str, conversation: str) -> Reply:
        """One conversation's turns."""

    @abc.abstractmethod
    def rate(self, transport: str, user: str, query_id: str, comment: str) -> Reply:
        """Rate one of the user's answers with a comment."""

    @abc.abstractmethod
    def feedback(self, transport: str, user: str, store: str) -> Reply:
        """The ratings of a store as an administrator (``user``) sees them."""

    @abc.abstractmethod
    def export(self, user: str, store: str) -> Reply:
        """The ratings exported (e.g. as an evaluation file) by an administrator."""

    def rank_lexically(self, store: str) -> None:
        """Optional: make ``store`` rank by BM25 alone with no relevancy threshold, so that its lexical statistics
        show in the order of what a caller gets back."""
        raise NotSupported("no lexical-only ranking")

    def adapted_twin(self, world: World) -> RagTarget:
        """Optional: a second instance of the service, started empty but for ``world``'s groups, whose stores are
        each ranked by their own trained model; the adapted-model probe fills it with :meth:`rewrite`, trains
        with :meth:`train_ranker` and asks it with :meth:`ask`. One twin per target; :meth:`stop` stops it."""
        raise NotSupported("no per-store trained ranking model")

    def train_ranker(self, store: str, *, all_content: bool = False) -> TrainedModel:
        """Optional: train ``store``'s own ranking model on what the service learns from by default (what every
        caller may read), or with ``all_content`` on every document whatever its ACL (an opt-in), and install it
        even where it ranks no better than the current ranking; queries to ``store`` are ranked by it next."""
        raise NotSupported("no per-store trained ranking model")

    # -- changes between probes (each returns when the service says it is done) -----------------------------
    @abc.abstractmethod
    def set_acl(self, store: str, document: str, allow: list[str], deny: list[str]) -> None:
        """An administrator's override of a document's ACL."""

    @abc.abstractmethod
    def remove_member(self, group: str, member: str) -> None:
        """Revoke a group membership."""

    def remove_directory_member(self, source: str, group: str, member: str) -> None:
        """Revoke a membership where ``source`` (one of :attr:`directory_sources`) keeps it: in the directory
        itself, as its administrator or identity provider would."""
        raise NotSupported(f"no {source} directory")

    @abc.abstractmethod
    def rewrite(self, store: str, document: str, title: str, text: str, allow: list[str], deny: list[str]) -> None:
        """Replace a document's text."""

    @abc.abstractmethod
    def delete(self, store: str, document: str) -> None:
        """Delete a document."""
