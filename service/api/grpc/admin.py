"""``docqa.v1.AdminService`` (store settings, audit trail) and ``docqa.v1.IndexingService`` (pushes)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc

from acl.errors import DocQAError, InvalidArgument
from acl.model import Acl
from indexer.index.attributes import frozen_metadata
from service.access.authorized import AuthorizedAdmin
from service.access.state import AclView
from service.access.store_summaries import StoreSummaries, StoreSummary, Viewer
from service.api.errors import for_remote_caller, mapping_for, public_message
from service.api.grpc.adaptation import adapt_request, adaptation_message
from service.api.grpc.calibration import calibration_message
from service.api.grpc.context import Services, rpc
from service.api.grpc.explain import explanation_message, question_message
from service.api.grpc.filters import pushed_modified
from service.domain.store import STORE_SETTINGS
from service.persistence.ports import ADMIN_SOURCE
from service.usecases.adaptation import adaptation, start_adaptation
from service.usecases.calibration import calibrate


def settings_message(services: Services, summary: StoreSummary) -> Any:
    """A store's settings as the viewer may see them; admin-only fields (and a setting without value) are empty."""
    store = summary.store
    settings = {declared.name: summary.setting(declared) for declared in STORE_SETTINGS}
    return services.stubs.admin.StoreSettings(
        store_id=store.id,
        name=store.name,
        embedding_model=summary.embedding_model or "",
        documents=summary.documents,
        chunks=summary.chunks,
        **{name: value for name, value in settings.items() if value is not None},
    )


def _admin(services: Services, context: grpc.ServicerContext) -> AuthorizedAdmin:
    """The admin operations for this call's caller: each refuses a non-admin (PERMISSION_DENIED)."""
    identity = services.identity(context)
    return services.app.admin_for(identity, f"grpc:{identity.user_id}")


class AdminServicer:
    def __init__(self, services: Services) -> None:
        self.services = services

    def _listing(self, context: grpc.ServicerContext) -> tuple[StoreSummaries, Viewer]:
        repository = self.services.app.repository
        return StoreSummaries(repository), Viewer.of(self.services.identity(context).caller())

    @rpc
    def GetStoreSettings(self, request: Any, context: grpc.ServicerContext) -> Any:
        # Any verified caller, for a store where they may read a document; admins see every setting.
        listing, viewer = self._listing(context)
        return settings_message(self.services, listing.one(request.store_id, viewer))

    @rpc
    def SetStoreSettings(self, request: Any, context: grpc.ServicerContext) -> Any:
        changes = {s.name: getattr(request, s.name) for s in STORE_SETTINGS if request.HasField(s.name)}
        _admin(self.services, context).update_settings(request.store_id, changes)
        listing, viewer = self._listing(context)
        return settings_message(self.services, listing.one(request.store_id, viewer))

    @rpc
    def ListStores(self, request: Any, context: grpc.ServicerContext) -> Any:
        listing, viewer = self._listing(context)
        return self.services.stubs.admin.ListStoresResponse(
            stores=[settings_message(self.services, s) for s in listing.list(viewer)]
        )

    @rpc
    def ListAuditEntries(self, request: Any, context: grpc.ServicerContext) -> Any:
        identity = self.services.identity(context)
        records = self.services.queries.entries(identity, request.user_id or None, request.limit or 100)
        entry = self.services.stubs.admin.AuditEntry
        entries = []
        for r in records:
            document_count, chunk_count = r.counts()
            message = entry(
                query_id=r.query_id,
                user_id=r.user_id,
                store_id=r.store_id,
                query_class=r.query_class,
                document_ids=list(r.document_ids),
                chunk_ids=list(r.chunk_ids),
                timings_ms=dict(r.timings_ms),
                outcome=r.outcome,
                created_at=r.created_at.isoformat(),
                document_count=document_count,
                chunk_count=chunk_count,
            )
            if r.threshold is not None:
                message.threshold = r.threshold
            entries.append(message)
        return self.services.stubs.admin.ListAuditEntriesResponse(entries=entries)

    def _member(self, request: Any, context: grpc.ServicerContext, action: str) -> Any:
        changed = _admin(self.services, context).change_member(action, request.group, request.member)
        return self.services.stubs.admin.GroupMemberResponse(changed=changed)

    @rpc
    def AddGroupMember(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._member(request, context, "add")

    @rpc
    def RemoveGroupMember(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._member(request, context, "remove")

    @rpc
    def ResetGroupMember(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._member(request, context, "reset")

    @rpc
    def CalibrateStore(self, request: Any, context: grpc.ServicerContext) -> Any:
        identity = self.services.identity(context)
        sample = request.sample if request.HasField("sample") else None
        report = calibrate(
            self.services.app,
            identity,
            request.store_id,
            sample=sample,
            apply=request.apply,
            user_id=identity.user_id,
            interface="grpc",
        )
        return calibration_message(self.services.stubs.admin, report)

    @rpc
    def StartAdaptation(self, request: Any, context: grpc.ServicerContext) -> Any:
        identity = self.services.identity(context)
        status = start_adaptation(
            self.services.app,
            identity,
            request.store_id,
            adapt_request(request.options),
            user_id=identity.user_id,
            interface="grpc",
        )
        return adaptation_message(self.services.stubs.admin, status)

    @rpc
    def GetAdaptation(self, request: Any, context: grpc.ServicerContext) -> Any:
        status = adaptation(self.services.app, self.services.identity(context), request.store_id)
        return adaptation_message(self.services.stubs.admin, status)

    @rpc
    def ExplainAccess(self, request: Any, context: grpc.ServicerContext) -> Any:
        identity = self.services.identity(context)
        admin = self.services.app.admin_for(identity, f"grpc:{identity.user_id}")
        if request.question:
            if request.document_id or not request.store_id:
                raise InvalidArgument("a question needs store_id and no document_id")
            searched = admin.explain_question(
                request.user_id,
                request.store_id,
                request.question,
                identity.caller(),
                by=identity.user_id,
                interface="grpc",
            )
            return question_message(self.services.stubs.admin, searched)
        result = admin.explain_access(
            request.user_id, request.document_id, request.store_id or None, by=identity.user_id, interface="grpc"
        )
        return explanation_message(self.services.stubs.admin, self.services.stubs.common, result)


def _acl(message: Any) -> Acl:
    return Acl.of(message.allow, message.deny)


class IndexingServicer:
    """Content-management plugins push documents; every call needs the admin role."""

    def __init__(self, services: Services) -> None:
        self.services = services

    def _upsert(self, admin: AuthorizedAdmin, request: Any) -> Any:
        if not request.document_id or len(request.document_id) > 1000:
            raise InvalidArgument("document_id must be 1 to 1000 characters")
        kind = request.WhichOneof("content")
        if kind is None:
            raise InvalidArgument("give the document's text or its bytes with a content type")
        if kind == "text":
            data, content_type = request.text.encode("utf-8"), request.content_type or "text/plain"
        else:
            if not request.content_type:
                raise InvalidArgument("content_type is required with data")
            data, content_type = request.data, request.content_type
        if not request.HasField("acl"):
            raise InvalidArgument("acl is required (principals that may read the document)")
        acl = _acl(request.acl)
        # Checked before the store is created: bad metadata changes nothing.
        metadata, modified = frozen_metadata(dict(request.metadata)), pushed_modified(request)
        # A store is created only on request: a mistyped store id is NOT_FOUND.
        report = admin.ingestor(request.store_id, create=request.create_store).upsert_bytes(
            request.document_id,
            data,
            content_type,
            acl=acl,
            title=request.title or None,
            source_uri=request.source_uri,
            metadata=metadata,
            modified=modified,
        )
        outcome = "indexed" if report.indexed else "acl_updated" if report.acl_updated else "unchanged"
        return self.services.stubs.indexing.UpsertDocumentResponse(
            document_id=request.document_id, outcome=outcome, chunks=report.chunks
        )

    @rpc
    def UpsertDocument(self, request: Any, context: grpc.ServicerContext) -> Any:
        admin = _admin(self.services, context)
        admin.may_index()  # before the request is looked at
        return self._upsert(admin, request)

    @rpc
    def DeleteDocument(self, request: Any, context: grpc.ServicerContext) -> Any:
        _admin(self.services, context).delete_document(request.document_id, request.store_id or None)
        return self.services.stubs.indexing.DeleteDocumentResponse()

    def _acl_state(self, view: AclView) -> Any:
        common = self.services.stubs.common
        reply = self.services.stubs.indexing.SetDocumentAclResponse(
            acl=common.Acl(allow=sorted(view.effective.allow), deny=sorted(view.effective.deny)),
            source=view.source,
            store_id=view.store_id,
        )
        if view.source == ADMIN_SOURCE:
            reply.changed_by = view.changed_by or ""
            reply.changed_at = "" if view.changed_at is None else view.changed_at.isoformat()
            if view.ingested is not None and view.ingested != view.effective:
                reply.source_acl.CopyFrom(
                    common.Acl(allow=sorted(view.ingested.allow), deny=sorted(view.ingested.deny))
                )
        return reply

    @rpc
    def SetDocumentAcl(self, request: Any, context: grpc.ServicerContext) -> Any:
        view = _admin(self.services, context).set_acl(
            request.document_id, request.acl.allow, request.acl.deny, request.store_id or None
        )
        return self._acl_state(view)

    @rpc
    def GetDocumentAcl(self, request: Any, context: grpc.ServicerContext) -> Any:
        view = _admin(self.services, context).acl_view(request.document_id, request.store_id or None)
        return self._acl_state(view)

    @rpc
    def ResetDocumentAcl(self, request: Any, context: grpc.ServicerContext) -> Any:
        view = _admin(self.services, context).reset_acl(request.document_id, request.store_id or None)
        return self._acl_state(view)

    @rpc
    def BulkUpsert(self, request_iterator: Iterator[Any], context: grpc.ServicerContext) -> Any:
        admin = _admin(self.services, context)
        admin.may_index()  # before the stream is read
        result = self.services.stubs.indexing.BulkUpsertResult
        results = []
        for request in request_iterator:
            try:
                done = self._upsert(admin, request)
            except DocQAError as caught:
                exc = for_remote_caller(caught)
                mapping = mapping_for(exc)
                results.append(
                    result(
                        document_id=request.document_id,
                        ok=False,
                        outcome=mapping.grpc_status,
                        error=public_message(exc),
                    )
                )
            else:
                results.append(result(document_id=done.document_id, ok=True, outcome=done.outcome, chunks=done.chunks))
        return self.services.stubs.indexing.BulkUpsertResponse(results=results)
