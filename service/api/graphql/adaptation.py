"""GraphQL types and resolvers of ``startAdaptation`` and ``adaptation``: a store's reranker trained in the
background, and how far it is (admin only)."""

from __future__ import annotations

from enum import Enum

import strawberry

from service.adaptation.background import AdaptRequest, AdaptStatus
from service.bootstrap import App
from service.security.tokens import Identity
from service.usecases.adaptation import adaptation, start_adaptation


@strawberry.enum(
    description="IDLE: no run since the server started; RUNNING: started by the server, or by docqa adapt "
    "elsewhere; SUCCEEDED: ended, its model installed or the current ranking kept (see message); FAILED: see error."
)
class AdaptationState(Enum):
    IDLE = "idle"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@strawberry.input(description="What an adaptation learns from, and how much; absent fields: the server's defaults.")
class AdaptationOptionsInput:
    principals: list[str] | None = strawberry.field(
        default=None,
        description="Whose readable documents it learns from ('user:<id>', 'group:<id>'; at most 100); "
        "default group:everyone.",
    )
    all_content: bool = strawberry.field(
        default=False,
        description="Learn from every document whatever its ACL: the model may then rank with what some callers "
        "may not read. Excludes principals.",
    )
    max_queries: int | None = strawberry.field(default=None, description="Training pseudo-queries, 24 to 100000.")
    layers: int | None = strawberry.field(default=None, description="Encoder layers kept, 1 to 48.")
    epochs: int | None = strawberry.field(default=None, description="Passes over the training queries, 1 to 20.")

    def request(self) -> AdaptRequest:
        return AdaptRequest(
            principals=None if self.principals is None else tuple(self.principals),
            all_content=self.all_content,
            max_queries=self.max_queries,
            layers=self.layers,
            epochs=self.epochs,
        )


@strawberry.type(
    description="A store's adaptation: the last run the server started (phase and steps while it runs, how it "
    "ended), or IDLE. Never a document's text."
)
class Adaptation:
    store_id: str
    state: AdaptationState
    phase: str | None = strawberry.field(
        description="starting, reading, mining, training, exporting, evaluating or installing."
    )
    done: int = strawberry.field(description="Steps of the phase done.")
    total: int = strawberry.field(description="Steps of the phase.")
    started_at: str | None = strawberry.field(description="ISO 8601, UTC.")
    finished_at: str | None = strawberry.field(description="ISO 8601, UTC.")
    started_by: str | None
    message: str | None = strawberry.field(
        description="How it ended: the model installed, or the current ranking kept and by how much the new one lost."
    )
    installed: bool = strawberry.field(description="Whether the run installed its model.")
    error: str | None = strawberry.field(description="Why a FAILED run failed.")

    @staticmethod
    def of(s: AdaptStatus) -> Adaptation:
        return Adaptation(
            store_id=s.store_id,
            state=AdaptationState(s.state.value),
            phase=s.phase or None,
            done=s.done,
            total=s.total,
            started_at=None if s.started_at is None else s.started_at.isoformat(),
            finished_at=None if s.finished_at is None else s.finished_at.isoformat(),
            started_by=s.started_by,
            message=s.message or None,
            installed=s.installed,
            error=s.error,
        )


def start_store_adaptation(
    app: App, identity: Identity, store_id: str, options: AdaptationOptionsInput | None
) -> Adaptation:
    request = AdaptRequest() if options is None else options.request()
    status = start_adaptation(app, identity, store_id, request, user_id=identity.user_id, interface="graphql")
    return Adaptation.of(status)


def store_adaptation(app: App, identity: Identity, store_id: str) -> Adaptation:
    return Adaptation.of(adaptation(app, identity, store_id))
