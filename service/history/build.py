"""The history room's objects as configuration wants them (called by ``service.bootstrap``)."""

from __future__ import annotations

from acl.checker import AccessChecker
from acl.errors import ConfigurationError
from service.config import Settings
from service.generation.port import Generator
from service.history.conversations import Conversations
from service.history.recheck import Recheck
from service.history.rewrite import CondensingRewriter, OfflineRewriter, Rewriter
from service.history.service import HistoryService
from service.persistence.history_ports import DocumentVersions, HistoryRepository
from service.persistence.ports import SettingsRepository


def sql_history(repository: SettingsRepository) -> HistoryRepository:
    """The SQL history repository on the settings repository's own database (its engine, its migrations)."""
    from service.persistence.sql_history import SqlHistoryRepository

    engine = getattr(repository, "engine", None)
    if engine is None:
        raise ConfigurationError("the settings repository handed in keeps no SQL history")
    return SqlHistoryRepository(engine)


def document_versions(repository: SettingsRepository) -> DocumentVersions:
    """The versions of the catalog's documents, read from the settings repository's own database."""
    from service.persistence.sql_history_versions import SqlDocumentVersions

    engine = getattr(repository, "engine", None)
    if engine is None:
        raise ConfigurationError("the settings repository handed in keeps no SQL catalog")
    return SqlDocumentVersions(engine)


def recheck(repository: SettingsRepository) -> Recheck:
    """The re-check of old answers: the directory, the authoritative ACLs and the document versions of the
    settings database."""
    return Recheck(repository, AccessChecker(repository), document_versions(repository))


def build_conversations(settings: Settings, repository: SettingsRepository, generator: Generator) -> Conversations:
    """Conversations with the condense prompt on watsonx, the offline rewrite otherwise."""
    max_chars = settings.query.max_question_chars
    watsonx = settings.generator.backend == "watsonx"
    rewriter: Rewriter = CondensingRewriter(generator, max_chars) if watsonx else OfflineRewriter()
    return Conversations(
        sql_history(repository),
        recheck(repository),
        rewriter,
        turns=settings.history.turns,
        max_question_chars=max_chars,
    )


def build_history(settings: Settings, repository: SettingsRepository) -> HistoryService:
    """Users' history and ratings as the interfaces serve them."""
    retention = settings.history.retention_days
    return HistoryService(sql_history(repository), recheck(repository), repository, retention_days=retention)
