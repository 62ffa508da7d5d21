"""The GraphQL schema (strawberry): the three queries, stores, settings mutations, the audit trail.

Resolvers are thin: they take the caller from the verified bearer token in the
request context, call the same audited engine and admin as gRPC, and errors
carry ``extensions.code`` from the one error table (``service.api.errors``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Iterator
from typing import Any, TypeVar

import strawberry
from strawberry.extensions import MaxAliasesLimiter, MaxTokensLimiter, QueryDepthLimiter, SchemaExtension
from strawberry.types import Info

from acl.errors import DocQAError
from graphql import GraphQLError
from service.access.store_summaries import StoreSummaries, StoreSummary, Viewer
from service.api.errors import bounded_message, for_remote_caller, mapping_for, public_message
from service.api.graphql import history as past
from service.api.graphql.access import (
    AccessExplanation,
    DocumentAcl,
    change_member,
    document_acl,
    explain_access,
    reset_document_acl,
    set_document_acl,
    update_settings,
)
from service.api.graphql.adaptation import (
    Adaptation,
    AdaptationOptionsInput,
    start_store_adaptation,
    store_adaptation,
)
from service.api.graphql.analysis import (
    ComparisonResult,
    SummaryLength,
    SummaryResult,
    compare_documents,
    summarize_document,
)
from service.api.graphql.calibration import CalibrationReportType, calibrate_store
from service.api.graphql.console import DocumentInfo, RelevancyPreview, readable_documents, relevancy_preview
from service.api.graphql.context import RequestContext, run_resolver
from service.api.graphql.filters import QueryFilter, metadata_filter
from service.api.graphql.results import QueryResult, Timing
from service.api.graphql.setting_fields import StoreSettingField, setting_fields, settings_input, settings_output
from service.api.graphql.streaming import AnswerEvent, answer_events, stream_query
from service.api.graphql.validation_cache import ValidQueries
from service.domain.queries import DocumentQuery, MultiDocumentQuery, VectorQuery
from service.domain.store import STORE_SETTINGS
from service.persistence.ports import AuditRecord

log = logging.getLogger("docqa.graphql")
T = TypeVar("T")


# ---------------------------------------------------------------------------- types
@strawberry.type(
    description="A store and its query settings. Counts are of the documents the caller may read; "
    "model ids and the prompt template are null unless the caller is an admin."
)
@settings_output
class StoreSettings:
    id: str
    name: str
    embedding_model: str | None
    documents: int
    chunks: int

    @staticmethod
    def of(summary: StoreSummary) -> StoreSettings:
        s = summary.store
        settings: dict[str, Any] = {declared.name: summary.setting(declared) for declared in STORE_SETTINGS}
        return StoreSettings(
            id=s.id,
            name=s.name,
            embedding_model=summary.embedding_model,
            documents=summary.documents,
            chunks=summary.chunks,
            **settings,
        )


@strawberry.input(description="Settings to change; absent fields are left as they are.")
@settings_input
class StoreSettingsInput:
    pass


@strawberry.type(description="One audited query (never its question or any text).")
class AuditEntry:
    query_id: str
    user_id: str
    store_id: str
    query_class: str
    document_ids: list[str]
    chunk_ids: list[str]
    threshold: float | None
    timings_ms: list[Timing]
    outcome: str
    interface: str
    created_at: str
    document_count: int = strawberry.field(description="Documents the request named (documentIds: the first 20).")
    chunk_count: int = strawberry.field(description="Chunks the answer had (chunkIds: the first 100).")

    @staticmethod
    def of(record: AuditRecord) -> AuditEntry:
        document_count, chunk_count = record.counts()
        return AuditEntry(
            query_id=record.query_id,
            user_id=record.user_id,
            store_id=record.store_id,
            query_class=record.query_class,
            document_ids=list(record.document_ids),
            chunk_ids=list(record.chunk_ids),
            threshold=record.threshold,
            timings_ms=[Timing(name=k, ms=v) for k, v in record.timings_ms.items()],
            outcome=record.outcome,
            interface=record.interface,
            created_at=record.created_at.isoformat(),
            document_count=document_count,
            chunk_count=chunk_count,
        )


def _viewer(context: RequestContext) -> tuple[StoreSummaries, Viewer]:
    repository = context.services.app.repository
    return StoreSummaries(repository), Viewer.of(context.identity().caller())


def _summary(context: RequestContext, store_id: str) -> StoreSummary:
    listing, viewer = _viewer(context)
    return listing.one(store_id, viewer)


def _ask(context: RequestContext, query: VectorQuery | MultiDocumentQuery | DocumentQuery) -> QueryResult:
    return QueryResult.of(context.services.queries.ask(context.identity(), query, "graphql", cancel=context.cancel))


def _set(context: RequestContext, store_id: str, changes: dict[str, Any]) -> StoreSettings:
    update_settings(context.services.app, context.identity(), store_id, changes)
    return StoreSettings.of(_summary(context, store_id))


# ---------------------------------------------------------------------------- operations
@strawberry.type
class Query:
    @strawberry.field(description="A question over the whole store (ACL applied inside the search).")
    async def vector_query(
        self,
        info: Info[RequestContext, None],
        store_id: str,
        question: str,
        level: float | None = None,
        max_chunks: int | None = None,
        perform_llm_query: bool = True,
        filter: QueryFilter | None = None,
        conversation_id: str | None = None,
    ) -> QueryResult:
        return await run_resolver(
            info,
            "vectorQuery",
            lambda c: _ask(
                c,
                VectorQuery(
                    store_id, question, level, max_chunks, perform_llm_query, metadata_filter(filter), conversation_id
                ),
            ),
        )

    @strawberry.field(description="A question over chosen documents; maxChunks -1 sends the whole documents.")
    async def multi_document_query(
        self,
        info: Info[RequestContext, None],
        store_id: str,
        question: str,
        document_ids: list[str],
        level: float | None = None,
        max_chunks: int | None = None,
        perform_llm_query: bool = True,
        filter: QueryFilter | None = None,
        conversation_id: str | None = None,
    ) -> QueryResult:
        ids = tuple(document_ids)
        return await run_resolver(
            info,
            "multiDocumentQuery",
            lambda c: _ask(
                c,
                MultiDocumentQuery(
                    store_id,
                    question,
                    ids,
                    level,
                    max_chunks,
                    perform_llm_query,
                    metadata_filter(filter),
                    conversation_id,
                ),
            ),
        )

    @strawberry.field(description="A question about one document (its whole text while it fits).")
    async def document_query(
        self,
        info: Info[RequestContext, None],
        store_id: str,
        question: str,
        document_id: str,
        level: float | None = None,
        perform_llm_query: bool = True,
        filter: QueryFilter | None = None,
        conversation_id: str | None = None,
    ) -> QueryResult:
        return await run_resolver(
            info,
            "documentQuery",
            lambda c: _ask(
                c,
                DocumentQuery(
                    store_id, question, document_id, level, perform_llm_query, metadata_filter(filter), conversation_id
                ),
            ),
        )

    @strawberry.field(
        description="Summarise a document: whole while it fits the model, else map-reduce over its sections; "
        "offline an extractive summary (quoted sentences, extractive: true). NOT_FOUND when the caller may not read it."
    )
    async def summarize_document(
        self, info: Info[RequestContext, None], store_id: str, document_id: str, length: SummaryLength | None = None
    ) -> SummaryResult:
        return await run_resolver(
            info,
            "summarizeDocument",
            lambda c: summarize_document(c.services.queries, c.identity(), store_id, document_id, length, c.cancel),
        )

    @strawberry.field(
        description="Compare 2 to 5 documents by topic (ranked by question when given); every statement cites its "
        "chunk. NOT_FOUND for the whole request when the caller may not read one of them."
    )
    async def compare_documents(
        self, info: Info[RequestContext, None], store_id: str, document_ids: list[str], question: str | None = None
    ) -> ComparisonResult:
        return await run_resolver(
            info,
            "compareDocuments",
            lambda c: compare_documents(c.services.queries, c.identity(), store_id, document_ids, question, c.cancel),
        )

    @strawberry.field(description="The stores where the caller may read a document, with counts of what they may read.")
    async def stores(self, info: Info[RequestContext, None]) -> list[StoreSettings]:
        def work(context: RequestContext) -> list[StoreSettings]:
            listing, viewer = _viewer(context)
            return [StoreSettings.of(s) for s in listing.list(viewer)]

        return await run_resolver(info, "stores", work)

    @strawberry.field(description="One store's settings (NOT_FOUND where the caller may read nothing).")
    async def store(self, info: Info[RequestContext, None], store_id: str) -> StoreSettings:
        def work(context: RequestContext) -> StoreSettings:
            return StoreSettings.of(_summary(context, store_id))

        return await run_resolver(info, "store", work)

    @strawberry.field(
        description="Every store setting as declared: type, bounds, default, description (any verified caller)."
    )
    async def store_setting_fields(self, info: Info[RequestContext, None]) -> list[StoreSettingField]:
        def work(context: RequestContext) -> list[StoreSettingField]:
            context.identity()  # a verified caller, as for every other field
            return setting_fields()

        return await run_resolver(info, "storeSettingFields", work)

    @strawberry.field(
        description="Audited queries, newest first: the caller's own; an admin may name a user or see all. since/until "
        "(ISO-8601, inclusive; a bare date is a whole UTC day) bound when they were made."
    )
    async def audit_entries(
        self,
        info: Info[RequestContext, None],
        user_id: str | None = None,
        limit: int = 100,
        since: str | None = None,
        until: str | None = None,
    ) -> list[AuditEntry]:
        def work(context: RequestContext) -> list[AuditEntry]:
            records = context.services.queries.entries(context.identity(), user_id, limit, since, until)
            return [AuditEntry.of(r) for r in records]

        return await run_resolver(info, "auditEntries", work)

    @strawberry.field(
        description="The documents of a store the caller may read, by title; search: part of the id or title "
        "(ignoring case); first: 1-200, default 50. NOT_FOUND where the caller may read nothing."
    )
    async def documents(
        self, info: Info[RequestContext, None], store_id: str, search: str | None = None, first: int | None = None
    ) -> list[DocumentInfo]:
        return await run_resolver(
            info, "documents", lambda c: readable_documents(c.services.app, c.identity(), store_id, search, first)
        )

    @strawberry.field(
        description="A sample question's top k (1-50, default 20) chunks the admin may read, with no threshold, "
        "each with the highest level at which it passes: for previewing a relevancy level (admin only; audited as "
        "interface console-preview, kept out of history)."
    )
    async def relevancy_preview(
        self, info: Info[RequestContext, None], store_id: str, question: str, k: int | None = None
    ) -> RelevancyPreview:
        return await run_resolver(
            info,
            "relevancyPreview",
            lambda c: relevancy_preview(c.services.app, c.services.queries, c.identity(), store_id, question, k),
        )

    @strawberry.field(description="A document's effective ACL and where it came from (admin only).")
    async def document_acl(
        self, info: Info[RequestContext, None], document_id: str, store_id: str | None = None
    ) -> DocumentAcl:
        return await run_resolver(
            info, "documentAcl", lambda c: document_acl(c.services.app, c.identity(), document_id, store_id)
        )

    @strawberry.field(
        description="Why a user can or cannot read a document: the decision, the deciding entry (deny wins), the "
        "ACL with its source, and every principal the user holds with the chain and source that give it; or, "
        "with a question and storeId instead of documentId, the admin's own top 10 chunks (level 0, the store's "
        "rerank; only what the admin may read), each with whether the user would see it and the deciding entry "
        "(read-only; audited as class explain_access; admin only). userId: 'alice' or 'user:alice'."
    )
    async def explain_access(
        self,
        info: Info[RequestContext, None],
        user_id: str,
        document_id: str | None = None,
        store_id: str | None = None,
        question: str | None = None,
    ) -> AccessExplanation:
        return await run_resolver(
            info,
            "explainAccess",
            lambda c: explain_access(c.services.app, c.identity(), user_id, document_id, store_id, question),
        )

    @strawberry.field(description="The caller's answered queries, newest first (first: 1-100, default 20).")
    async def history(
        self, info: Info[RequestContext, None], first: int | None = None, after: str | None = None
    ) -> past.HistoryConnection:
        return await run_resolver(info, "history", lambda c: past.history(c, first, after))

    @strawberry.field(description="One of the caller's conversations, oldest turn first (NOT_FOUND otherwise).")
    async def conversation(self, info: Info[RequestContext, None], id: str) -> past.Conversation:
        return await run_resolver(info, "conversation", lambda c: past.conversation(c, id))

    @strawberry.field(
        description="A store's adaptation: the last run startAdaptation started since the server started, how far "
        "it is or how it ended; IDLE when none (admin only)."
    )
    async def adaptation(self, info: Info[RequestContext, None], store_id: str) -> Adaptation:
        return await run_resolver(
            info, "adaptation", lambda c: store_adaptation(c.services.app, c.identity(), store_id)
        )

    @strawberry.field(description="A store's ratings, newest first, sources re-checked for the admin (admin only).")
    async def feedback(
        self, info: Info[RequestContext, None], store_id: str, first: int | None = None, after: str | None = None
    ) -> past.FeedbackConnection:
        return await run_resolver(info, "feedback", lambda c: past.feedback(c, store_id, first, after))


@strawberry.type
class Mutation:
    @strawberry.mutation(description="Set a store's relevancy level in [0, 1] (admin only).")
    async def set_relevancy_level(self, info: Info[RequestContext, None], store_id: str, level: float) -> StoreSettings:
        return await run_resolver(info, "setRelevancyLevel", lambda c: _set(c, store_id, {"level": level}))

    @strawberry.mutation(description="Change any of a store's settings (admin only).")
    async def update_store_settings(
        self, info: Info[RequestContext, None], store_id: str, settings: StoreSettingsInput
    ) -> StoreSettings:
        changes = {k: v for k, v in vars(settings).items() if v is not None}
        return await run_resolver(info, "updateStoreSettings", lambda c: _set(c, store_id, changes))

    @strawberry.mutation(
        description="Calibrate a store's min/max thresholds from its own content: a report of predicted "
        "answer/refusal rates per level; with apply the proposed scale is stored and audited (admin only)."
    )
    async def calibrate_store(
        self, info: Info[RequestContext, None], store_id: str, apply: bool = False, sample: int | None = None
    ) -> CalibrationReportType:
        return await run_resolver(
            info, "calibrateStore", lambda c: calibrate_store(c.services.app, c.identity(), store_id, apply, sample)
        )

    @strawberry.mutation(
        description="Train the store's own reranker in the background (minutes to an hour) and install it when it "
        "ranks the store's held-out pseudo-queries better; poll adaptation(storeId). One run per store at a time "
        "(RESOURCE_EXHAUSTED); audited (admin only)."
    )
    async def start_adaptation(
        self, info: Info[RequestContext, None], store_id: str, options: AdaptationOptionsInput | None = None
    ) -> Adaptation:
        return await run_resolver(
            info,
            "startAdaptation",
            lambda c: start_store_adaptation(c.services.app, c.identity(), store_id, options),
        )

    @strawberry.mutation(
        description="Replace a document's WHOLE ACL (allow and deny) by an admin override, kept over every "
        "re-index until resetDocumentAcl (admin only)."
    )
    async def set_document_acl(
        self,
        info: Info[RequestContext, None],
        document_id: str,
        allow: list[str],
        deny: list[str] | None = None,
        store_id: str | None = None,
    ) -> DocumentAcl:
        return await run_resolver(
            info,
            "setDocumentAcl",
            lambda c: set_document_acl(c.services.app, c.identity(), document_id, allow, deny or [], store_id),
        )

    @strawberry.mutation(description="Hand a document back to its manifest's (or push's) ACL (admin only).")
    async def reset_document_acl(
        self, info: Info[RequestContext, None], document_id: str, store_id: str | None = None
    ) -> DocumentAcl:
        return await run_resolver(
            info, "resetDocumentAcl", lambda c: reset_document_acl(c.services.app, c.identity(), document_id, store_id)
        )

    @strawberry.mutation(description="Add a global group membership; lifts an earlier removal (admin only).")
    async def add_group_member(self, info: Info[RequestContext, None], group: str, member: str) -> bool:
        return await run_resolver(
            info, "addGroupMember", lambda c: change_member(c.services.app, c.identity(), "add", group, member)
        )

    @strawberry.mutation(
        description="Remove a membership everywhere (global and every store's manifest), kept over every "
        "re-index until resetGroupMember (admin only)."
    )
    async def remove_group_member(self, info: Info[RequestContext, None], group: str, member: str) -> bool:
        return await run_resolver(
            info, "removeGroupMember", lambda c: change_member(c.services.app, c.identity(), "remove", group, member)
        )

    @strawberry.mutation(description="Delete one of the caller's history entries and its rating (NOT_FOUND otherwise).")
    async def delete_history_entry(self, info: Info[RequestContext, None], query_id: str) -> bool:
        return await run_resolver(info, "deleteHistoryEntry", lambda c: past.delete_history_entry(c, query_id))

    @strawberry.mutation(description="Delete every turn of one of the caller's conversations; how many were deleted.")
    async def delete_conversation(self, info: Info[RequestContext, None], id: str) -> int:
        return await run_resolver(info, "deleteConversation", lambda c: past.delete_conversation(c, id))

    @strawberry.mutation(description="Rate one of the caller's answers; a later rating replaces it (comment ≤ 2000).")
    async def rate_answer(
        self, info: Info[RequestContext, None], query_id: str, rating: past.Rating, comment: str | None = None
    ) -> past.AnswerRating:
        return await run_resolver(info, "rateAnswer", lambda c: past.rate_answer(c, query_id, rating, comment))

    @strawberry.mutation(
        description="Drop the admin's change of a membership: the manifests decide again (admin only)."
    )
    async def reset_group_member(self, info: Info[RequestContext, None], group: str, member: str) -> bool:
        return await run_resolver(
            info, "resetGroupMember", lambda c: change_member(c.services.app, c.identity(), "reset", group, member)
        )


@strawberry.type
class Subscription:
    @strawberry.subscription(
        description="A question answered as it is generated: text pieces, then the whole result. documentId asks "
        "one document, documentIds chosen ones, neither the whole store (the arguments of the three queries)."
    )
    async def ask_stream(
        self,
        info: Info[RequestContext, None],
        store_id: str,
        question: str,
        document_ids: list[str] | None = None,
        document_id: str | None = None,
        level: float | None = None,
        max_chunks: int | None = None,
        perform_llm_query: bool = True,
        filter: QueryFilter | None = None,
        conversation_id: str | None = None,
    ) -> AsyncGenerator[AnswerEvent, None]:
        def build() -> Any:
            filters = metadata_filter(filter)
            return stream_query(
                store_id,
                question,
                document_ids,
                document_id,
                level,
                max_chunks,
                perform_llm_query,
                filters,
                conversation_id,
            )

        async for event in answer_events(info.context, build):
            yield event


# ---------------------------------------------------------------------------- errors
def public_error(error: GraphQLError) -> GraphQLError:
    """``error`` as a caller may see it: a plain message and ``extensions.code``, never an internal detail."""
    if (error.extensions or {}).get("code"):
        return error  # already public (our own, or mapped once)
    return _public(error)


def _public(error: GraphQLError) -> GraphQLError:
    original = error.original_error
    if original is None:  # a syntax or validation error (depth, tokens, unknown field): about the query itself
        code = "GRAPHQL_VALIDATION_FAILED"
        message = error.message
    else:
        if isinstance(original, GraphQLError) and original.original_error is not None:
            original = original.original_error
        original = for_remote_caller(original)
        code = mapping_for(original).graphql_code
        message = public_message(original)
        if not isinstance(original, DocQAError) and not isinstance(original, GraphQLError):
            log.error("internal error in %s", error.path, exc_info=original)
        elif isinstance(original, GraphQLError):  # e.g. a bad argument type found while executing
            code, message = "BAD_USER_INPUT", original.message
    return GraphQLError(
        bounded_message(message),
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        extensions={"code": code},
    )


class ErrorCodes(SchemaExtension):
    """Every error leaves with a plain message and ``extensions.code``; internals never leave."""

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is not None and result.errors:
            result.errors = [_public(e) for e in result.errors]


class _Schema(strawberry.Schema):
    def process_errors(self, errors: list[GraphQLError], execution_context: Any = None) -> None:
        for error in errors:  # our own errors are answers, not incidents
            if not isinstance(error.original_error, DocQAError):
                log.debug("GraphQL error: %s", error.message)


def build_schema(max_depth: int = 8, max_tokens: int = 2000, max_aliases: int = 15) -> strawberry.Schema:
    """The schema with its limits (depth, tokens, aliases) and error codes; a query text that passed
    validation once is not validated again (``validation_cache``)."""
    return _Schema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        extensions=[
            lambda: QueryDepthLimiter(max_depth=max_depth),
            lambda: MaxTokensLimiter(max_token_count=max_tokens),
            lambda: MaxAliasesLimiter(max_alias_count=max_aliases),
            ValidQueries().extension(),
            ErrorCodes,
        ],
    )


def schema_sdl() -> str:
    """The SDL of the schema, as kept in ``graphql/schema.graphql``."""
    return build_schema().as_str() + "\n"
