"""The engine world of ``engine_world`` with conversations and history switched on."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from acl.checker import AccessChecker
from acl.model import Acl
from service.history.conversations import Conversations
from service.history.recheck import Recheck
from service.history.rewrite import OfflineRewriter
from service.history.service import HistoryService
from service.persistence.sql_history import SqlHistoryRepository
from service.persistence.sql_history_versions import SqlDocumentVersions
from service.query.engine import QueryEngine
from tests.unit.engine_world import World, make_world

FINANCE = Acl.of(["group:finance"])
EVERYONE = Acl.of(["group:everyone"])


@dataclass
class Clock:
    now: datetime = datetime(2027, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@dataclass
class HistoryWorld:
    world: World
    history: HistoryService
    repository: SqlHistoryRepository
    clock: Clock


def make_history_world(retention_days: int = 90) -> HistoryWorld:
    world = make_world()
    world.access.add_member("group:finance", "user:alice", "test")
    world.add(
        "q3.md",
        ["Revenue in the third quarter was 48 million euros.", "Operating costs rose because of the new data centre."],
        FINANCE,
    )
    world.add(
        "vacation.md",
        [
            "Employees receive 25 days of paid vacation per year.",
            "Unused vacation days may be carried over until March.",
            "Contractors receive no paid vacation days.",
        ],
        EVERYONE,
    )
    clock = Clock()
    repository = SqlHistoryRepository(world.repo.engine)
    recheck = Recheck(world.repo, AccessChecker(world.repo), SqlDocumentVersions(world.repo.engine))
    conversations = Conversations(repository, recheck, OfflineRewriter(), now=clock)
    world.engine = QueryEngine(
        repository=world.repo,
        index=world.index,
        embedder_for=lambda _: world.embedder,
        generator=world.generator,
        conversations=conversations,
    )
    history = HistoryService(repository, recheck, world.repo, retention_days=retention_days, now=clock)
    return HistoryWorld(world, history, repository, clock)
