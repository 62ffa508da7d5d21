"""``docqa.v1.AdminService`` (store settings, audit trail) and ``docqa.v1.IndexingService`` (pushes)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import cast

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
from service.api.grpc.stubs import admin_pb2, admin_pb2_grpc, common_pb2, indexing_pb2, indexing_pb2_grpc
from service.domain.store import STORE_SETTINGS
from service.persistence.ports import ADMIN_SOURCE
from service.usecases.adaptation import adaptation, start_adaptation
from service.usecases.calibration import calibrate


def settings_message(services: Services, summary: StoreSummary) -> admin_pb2.StoreSettings:
    """A store's settings as the viewer may see them; admin-only fields (and a setting without value) are empty."""
    store = summary.store
    settings = {declared.name: summary.setting(declared) for declared in STORE_SETTINGS}
    return admin_pb2.StoreSettings(
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


class AdminServicer(admin_pb2_grpc.AdminServiceServicer):
    def __init__(self, services: Services) -> None:
        self.services = services

    def _listing(self, context: grpc.ServicerContext) -> tuple[StoreSummaries, Viewer]:
        repository = self.services.app.repository
        return StoreSummaries(repository), Viewer.of(self.services.identity(context).caller())

    @rpc
    def GetStoreSettings(
        self, request: admin_pb2.GetStoreSettingsRequest, context: grpc.ServicerContext
    ) -> admin_pb2.StoreSettings:
        # Any verified caller, for a store where they may read a document; admins see every setting.
        listing, viewer = self._listing(context)
        return settings_message(self.services, listing.one(request.store_id, viewer))

    @rpc
    def SetStoreSettings(
        self, request: admin_pb2.SetStoreSettingsRequest, context: grpc.ServicerContext
    ) -> admin_pb2.StoreSettings:
        # The settings' names are the request's optional fields (the table generates admin.proto's messages).
        has = cast(Callable[[str], bool], request.HasField)
        changes = {s.name: getattr(request, s.name) for s in STORE_SETTINGS if has(s.name)}
        _admin(self.services, context).update_settings(request.store_id, changes)
        listing, viewer = self._listing(context)
        return settings_message(self.services, listing.one(request.store_id, viewer))

    @rpc
    def ListStores(
        self, request: admin_pb2.ListStoresRequest, context: grpc.ServicerContext
    ) -> admin_pb2.ListStoresResponse:
        listing, viewer = self._listing(context)
        return admin_pb2.ListStoresResponse(stores=[settings_message(self.services, s) for s in listing.list(viewer)])

    @rpc
    def ListAuditEntries(
        self, request: admin_pb2.ListAuditEntriesRequest, context: grpc.ServicerContext
    ) -> admin_pb2.ListAuditEntriesResponse:
        identity = self.services.identity(context)
        records = self.services.queries.entries(identity, request.user_id or None, request.limit or 100)
        entry = admin_pb2.AuditEntry
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
        return admin_pb2.ListAuditEntriesResponse(entries=entries)

    def _member(
        self, request: admin_pb2.GroupMemberRequest, context: grpc.ServicerContext, action: str
    ) -> admin_pb2.GroupMemberResponse:
        changed = _admin(self.services, context).change_member(action, request.group, request.member)
        return admin_pb2.GroupMemberResponse(changed=changed)

    @rpc
    def AddGroupMember(
        self, request: admin_pb2.GroupMemberRequest, context: grpc.ServicerContext
    ) -> admin_pb2.GroupMemberResponse:
        return self._member(request, context, "add")

    @rpc
    def RemoveGroupMember(
        self, request: admin_pb2.GroupMemberRequest, context: grpc.ServicerContext
    ) -> admin_pb2.GroupMemberResponse:
        return self._member(request, context, "remove")

    @rpc
    def ResetGroupMember(
        self, request: admin_pb2.GroupMemberRequest, context: grpc.ServicerContext
    ) -> admin_pb2.GroupMemberResponse:
        return self._member(request, context, "reset")

    @rpc
    def CalibrateStore(
        self, request: admin_pb2.CalibrateStoreRequest, context: grpc.ServicerContext
    ) -> admin_pb2.CalibrateStoreResponse:
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
        return calibration_message(report)

    @rpc
    def StartAdaptation(
        self, request: admin_pb2.StartAdaptationRequest, context: grpc.ServicerContext
    ) -> admin_pb2.Adaptation:
        identity = self.services.identity(context)
        status = start_adaptation(
            self.services.app,
            identity,
            request.store_id,
            adapt_request(request.options),
            user_id=identity.user_id,
            interface="grpc",
        )
        return adaptation_message(status)

    @rpc
    def GetAdaptation(
        self, request: admin_pb2.GetAdaptationRequest, context: grpc.ServicerContext
    ) -> admin_pb2.Adaptation:
        status = adaptation(self.services.app, self.services.identity(context), request.store_id)
        return adaptation_message(status)

    @rpc
    def ExplainAccess(
        self, request: admin_pb2.ExplainAccessRequest, context: grpc.ServicerContext
    ) -> admin_pb2.ExplainAccessResponse:
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
            return question_message(searched)
        result = admin.explain_access(
            request.user_id, request.document_id, request.store_id or None, by=identity.user_id, interface="grpc"
        )
        return explanation_message(result)


def _acl(message: common_pb2.Acl) -> Acl:
    return Acl.of(message.allow, message.deny)


class IndexingServicer(indexing_pb2_grpc.IndexingServiceServicer):
    """Content-management plugins push documents; every call needs the admin role."""

    def __init__(self, services: Services) -> None:
        self.services = services

    def _upsert(
        self, admin: AuthorizedAdmin, request: indexing_pb2.UpsertDocumentRequest
    ) -> indexing_pb2.UpsertDocumentResponse:
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
        return indexing_pb2.UpsertDocumentResponse(
            document_id=request.document_id, outcome=outcome, chunks=report.chunks
        )

    @rpc
    def UpsertDocument(
        self, request: indexing_pb2.UpsertDocumentRequest, context: grpc.ServicerContext
    ) -> indexing_pb2.UpsertDocumentResponse:
        admin = _admin(self.services, context)
        admin.may_index()  # before the request is looked at
        return self._upsert(admin, request)

    @rpc
    def DeleteDocument(
        self, request: indexing_pb2.DeleteDocumentRequest, context: grpc.ServicerContext
    ) -> indexing_pb2.DeleteDocumentResponse:
        _admin(self.services, context).delete_document(request.document_id, request.store_id or None)
        return indexing_pb2.DeleteDocumentResponse()

    def _acl_state(self, view: AclView) -> indexing_pb2.SetDocumentAclResponse:
        reply = indexing_pb2.SetDocumentAclResponse(
            acl=common_pb2.Acl(allow=sorted(view.effective.allow), deny=sorted(view.effective.deny)),
            source=view.source,
            store_id=view.store_id,
        )
        if view.source == ADMIN_SOURCE:
            reply.changed_by = view.changed_by or ""
            reply.changed_at = "" if view.changed_at is None else view.changed_at.isoformat()
            if view.ingested is not None and view.ingested != view.effective:
                reply.source_acl.CopyFrom(
                    common_pb2.Acl(allow=sorted(view.ingested.allow), deny=sorted(view.ingested.deny))
                )
        return reply

    @rpc
    def SetDocumentAcl(
        self, request: indexing_pb2.SetDocumentAclRequest, context: grpc.ServicerContext
    ) -> indexing_pb2.SetDocumentAclResponse:
        view = _admin(self.services, context).set_acl(
            request.document_id, request.acl.allow, request.acl.deny, request.store_id or None
        )
        return self._acl_state(view)

    @rpc
    def GetDocumentAcl(
        self, request: indexing_pb2.GetDocumentAclRequest, context: grpc.ServicerContext
    ) -> indexing_pb2.SetDocumentAclResponse:
        view = _admin(self.services, context).acl_view(request.document_id, request.store_id or None)
        return self._acl_state(view)

    @rpc
    def ResetDocumentAcl(
        self, request: indexing_pb2.ResetDocumentAclRequest, context: grpc.ServicerContext
    ) -> indexing_pb2.SetDocumentAclResponse:
        view = _admin(self.services, context).reset_acl(request.document_id, request.store_id or None)
        return self._acl_state(view)

    @rpc
    def BulkUpsert(
        self, request_iterator: Iterator[indexing_pb2.UpsertDocumentRequest], context: grpc.ServicerContext
    ) -> indexing_pb2.BulkUpsertResponse:
        admin = _admin(self.services, context)
        admin.may_index()  # before the stream is read
        result = indexing_pb2.BulkUpsertResult
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
        return indexing_pb2.BulkUpsertResponse(results=results)
