"""GraphQL types and the resolver of ``calibrateStore``: a store's calibration report (admin only)."""

from __future__ import annotations

import strawberry

from service.bootstrap import App
from service.domain.calibration import Distribution
from service.domain.calibration_report import CalibrationReport, LevelPrediction
from service.domain.threshold import Threshold
from service.security.tokens import Identity
from service.usecases.calibration import calibrate


@strawberry.type(description="One percentile of a score sample.")
class ScorePercentile:
    percentile: int
    score: float


@strawberry.type(description="The best cosine score of each probe, summarised.")
class ScoreDistribution:
    count: int
    mean: float
    min: float
    max: float
    percentiles: list[ScorePercentile]

    @staticmethod
    def of(d: Distribution) -> ScoreDistribution:
        return ScoreDistribution(
            count=d.count,
            mean=d.mean,
            min=d.minimum,
            max=d.maximum,
            percentiles=[ScorePercentile(percentile=p, score=v) for p, v in d.percentiles],
        )


@strawberry.type(description="A score scale: level 0 maps to minThreshold, level 1 to maxThreshold.")
class ScoreScale:
    min_threshold: float
    max_threshold: float

    @staticmethod
    def of(scale: Threshold) -> ScoreScale:
        return ScoreScale(min_threshold=scale.minimum, max_threshold=scale.maximum)


@strawberry.type(
    description="At one level: threshold, answerable probes answered, off-topic and near-domain ones refused (0-1)."
)
class LevelRates:
    level: float
    current_threshold: float
    current_answer_rate: float
    current_refusal_rate: float
    proposed_threshold: float
    proposed_answer_rate: float
    proposed_refusal_rate: float
    current_near_refusal_rate: float = strawberry.field(
        description="Near-domain probes refused now: by the threshold, or by the check of the names they ask about."
    )
    proposed_near_refusal_rate: float = strawberry.field(description="The same on the proposed scale.")

    @staticmethod
    def of(p: LevelPrediction) -> LevelRates:
        return LevelRates(
            level=p.level,
            current_threshold=p.current_threshold,
            current_answer_rate=p.current_answer_rate,
            current_refusal_rate=p.current_refusal_rate,
            proposed_threshold=p.proposed_threshold,
            proposed_answer_rate=p.proposed_answer_rate,
            proposed_refusal_rate=p.proposed_refusal_rate,
            current_near_refusal_rate=p.current_near_refusal_rate,
            proposed_near_refusal_rate=p.proposed_near_refusal_rate,
        )


@strawberry.type(
    name="CalibrationReport",
    description="A store's calibration: where its answerable and off-topic probes score, the proposed scale, "
    "and predicted answer/refusal rates per level. Numbers only, never a document's text.",
)
class CalibrationReportType:
    store_id: str
    embedding_model: str
    documents: int
    documents_sampled: int
    chunks: int
    title_probes: int
    heading_probes: int
    sentence_probes: int
    answerable: ScoreDistribution
    off_topic: ScoreDistribution
    cut: float = strawberry.field(description="The score that best separates the two samples.")
    separation_method: str = strawberry.field(description="separated | balanced-accuracy | none")
    balanced_accuracy: float
    auc: float
    level: float = strawberry.field(description="The store's relevancy level.")
    anchor_level: float = strawberry.field(description="The level the scale is fitted at (the store's, or 0.5).")
    current: ScoreScale
    proposed: ScoreScale
    current_saturated: float = strawberry.field(description="Share of answerable probes at relevance 1.00 now.")
    proposed_saturated: float = strawberry.field(description="The same on the proposed scale.")
    predictions: list[LevelRates]
    warnings: list[str]
    applied: bool = strawberry.field(description="Whether the proposed scale was stored.")
    near_domain_probes: int = strawberry.field(
        description="The store's headings turned toward a product it does not cover, scored like questions."
    )
    near_domain_refused_by_names: float = strawberry.field(
        description="Share of them refused whatever the threshold: no candidate speaks of the name they ask about."
    )

    @staticmethod
    def of(r: CalibrationReport) -> CalibrationReportType:
        return CalibrationReportType(
            store_id=r.store_id,
            embedding_model=r.embedding_model,
            documents=r.documents,
            documents_sampled=r.documents_sampled,
            chunks=r.chunks,
            title_probes=r.probes.titles,
            heading_probes=r.probes.headings,
            sentence_probes=r.probes.sentences,
            answerable=ScoreDistribution.of(r.answerable),
            off_topic=ScoreDistribution.of(r.off_topic),
            cut=r.separation.cut,
            separation_method=r.separation.method,
            balanced_accuracy=r.separation.balanced_accuracy,
            auc=r.separation.auc,
            level=r.level,
            anchor_level=r.anchor_level,
            current=ScoreScale.of(r.current),
            proposed=ScoreScale.of(r.proposed),
            current_saturated=r.current_saturated,
            proposed_saturated=r.proposed_saturated,
            predictions=[LevelRates.of(p) for p in r.predictions],
            warnings=list(r.warnings),
            applied=r.applied,
            near_domain_probes=r.near_domain_probes,
            near_domain_refused_by_names=r.near_domain_refused_by_names,
        )


def calibrate_store(
    app: App, identity: Identity, store_id: str, apply: bool, sample: int | None
) -> CalibrationReportType:
    report = calibrate(
        app, identity, store_id, sample=sample, apply=apply, user_id=identity.user_id, interface="graphql"
    )
    return CalibrationReportType.of(report)
