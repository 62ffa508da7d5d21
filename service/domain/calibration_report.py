"""What a calibration reports: both score samples, the proposed scale, and predicted rates per level.

Built once from the two samples (``build_report``) and presented by every
interface from ``to_dict`` (CLI JSON) or its fields (GraphQL, gRPC). It holds
numbers only: no probe text, so nothing of a document reaches the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from service.domain.calibration import (
    REPORT_LEVELS,
    Distribution,
    Separation,
    anchor_level,
    answer_rate,
    propose_scale,
    refusal_rate,
    saturated,
    separate,
)
from service.domain.threshold import Threshold

#: Fewer sampled documents than this and the report warns that its estimate is rough.
ROUGH_BELOW_DOCUMENTS = 10


@dataclass(frozen=True, slots=True)
class ProbeCounts:
    """How many answerable probes of each kind were scored."""

    titles: int
    headings: int
    sentences: int

    @property
    def total(self) -> int:
        return self.titles + self.headings + self.sentences


@dataclass(frozen=True, slots=True)
class NearProbe:
    """A near-domain probe's best score, and whether the check of its names refuses it whatever the score."""

    score: float
    refused_by_names: bool


@dataclass(frozen=True, slots=True)
class LevelPrediction:
    """At one level: the threshold, answerable probes answered, off-topic and near-domain ones refused (the
    latter by the threshold or by the check of their names), on each scale."""

    level: float
    current_threshold: float
    current_answer_rate: float
    current_refusal_rate: float
    proposed_threshold: float
    proposed_answer_rate: float
    proposed_refusal_rate: float
    current_near_refusal_rate: float = 0.0
    proposed_near_refusal_rate: float = 0.0


@dataclass(frozen=True, slots=True)
class CalibrationReport:
    """One calibration of one store (``applied``: whether the proposed scale was stored)."""

    store_id: str
    embedding_model: str
    documents: int
    documents_sampled: int
    chunks: int
    probes: ProbeCounts
    answerable: Distribution
    off_topic: Distribution
    separation: Separation
    level: float
    anchor_level: float
    current: Threshold
    proposed: Threshold
    #: Share of answerable probes whose relevance reads 1.00 on the current and the proposed scale.
    current_saturated: float
    proposed_saturated: float
    predictions: tuple[LevelPrediction, ...]
    warnings: tuple[str, ...]
    applied: bool = False
    #: Near-domain probes scored, and the share the check of their names refuses whatever the threshold.
    near_domain_probes: int = 0
    near_domain_refused_by_names: float = 0.0

    def as_applied(self) -> CalibrationReport:
        return replace(self, applied=True)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (the CLI's ``--json``; field names as in GraphQL, snake_case)."""

        def distribution(d: Distribution) -> dict[str, Any]:
            return {
                "count": d.count,
                "mean": d.mean,
                "min": d.minimum,
                "max": d.maximum,
                "percentiles": {f"p{p}": v for p, v in d.percentiles},
            }

        return {
            "store_id": self.store_id,
            "embedding_model": self.embedding_model,
            "documents": self.documents,
            "documents_sampled": self.documents_sampled,
            "chunks": self.chunks,
            "probes": {
                "titles": self.probes.titles,
                "headings": self.probes.headings,
                "sentences": self.probes.sentences,
                "off_topic": self.off_topic.count,
                "near_domain": self.near_domain_probes,
            },
            "near_domain_refused_by_names": self.near_domain_refused_by_names,
            "answerable": distribution(self.answerable),
            "off_topic": distribution(self.off_topic),
            "separation": {
                "cut": self.separation.cut,
                "method": self.separation.method,
                "balanced_accuracy": self.separation.balanced_accuracy,
                "auc": self.separation.auc,
            },
            "level": self.level,
            "anchor_level": self.anchor_level,
            "current": {"min_threshold": self.current.minimum, "max_threshold": self.current.maximum},
            "proposed": {"min_threshold": self.proposed.minimum, "max_threshold": self.proposed.maximum},
            "current_saturated": self.current_saturated,
            "proposed_saturated": self.proposed_saturated,
            "predictions": [
                {
                    "level": p.level,
                    "current": {
                        "threshold": p.current_threshold,
                        "answer_rate": p.current_answer_rate,
                        "refusal_rate": p.current_refusal_rate,
                        "near_refusal_rate": p.current_near_refusal_rate,
                    },
                    "proposed": {
                        "threshold": p.proposed_threshold,
                        "answer_rate": p.proposed_answer_rate,
                        "refusal_rate": p.proposed_refusal_rate,
                        "near_refusal_rate": p.proposed_near_refusal_rate,
                    },
                }
                for p in self.predictions
            ],
            "warnings": list(self.warnings),
            "applied": self.applied,
        }


def near_refusal_rate(near: Sequence[NearProbe], threshold: float) -> float:
    """Share of near-domain probes refused at ``threshold``: by the check of their names, or scoring below it."""
    return sum(1 for p in near if p.refused_by_names or p.score < threshold) / len(near) if near else 0.0


def predictions(
    answerable: Sequence[float],
    off_topic: Sequence[float],
    current: Threshold,
    proposed: Threshold,
    near: Sequence[NearProbe] = (),
) -> tuple[LevelPrediction, ...]:
    """Answer and refusal rates at REPORT_LEVELS on both scales."""
    rows = []
    for level in REPORT_LEVELS:
        before, after = current.score_for(level), proposed.score_for(level)
        assert before is not None and after is not None  # no level in REPORT_LEVELS is 0
        rows.append(
            LevelPrediction(
                level=level,
                current_threshold=before,
                current_answer_rate=answer_rate(answerable, before),
                current_refusal_rate=refusal_rate(off_topic, before),
                proposed_threshold=after,
                proposed_answer_rate=answer_rate(answerable, after),
                proposed_refusal_rate=refusal_rate(off_topic, after),
                current_near_refusal_rate=near_refusal_rate(near, before),
                proposed_near_refusal_rate=near_refusal_rate(near, after),
            )
        )
    return tuple(rows)


@dataclass(frozen=True, slots=True)
class Sampled:
    """What the calibration run measured of one store."""

    store_id: str
    embedding_model: str
    level: float
    current: Threshold
    documents: int
    documents_sampled: int
    chunks: int
    probes: ProbeCounts
    answerable: Sequence[float]
    off_topic: Sequence[float]
    near_domain: Sequence[NearProbe] = ()


def build_report(sampled: Sampled) -> CalibrationReport:
    """Fit the proposed scale to the samples and predict what it changes."""
    answerable, off_topic = sampled.answerable, sampled.off_topic
    separation = separate(answerable, off_topic)
    anchor = anchor_level(sampled.level)
    proposed = propose_scale(separation.cut, answerable, anchor)
    warnings = []
    if sampled.documents_sampled < ROUGH_BELOW_DOCUMENTS:
        warnings.append(
            f"only {sampled.documents_sampled} document(s) to learn from: the estimate is rough; "
            "calibrate again when the store has grown"
        )
    if anchor != sampled.level:
        warnings.append(
            f"the store's level is {sampled.level:g}, so the scale is fitted at level {anchor:g}: "
            f"set the level to {anchor:g} to get the proposed threshold"
        )
    if separation.method == "none":
        warnings.append(
            "answerable and off-topic probes score alike: this embedding model does not tell them apart "
            "in this store, so the proposal is a guess"
        )
    if proposed.minimum < 0.0 < separation.cut:
        warnings.append(
            f"the proposed min_threshold is negative ({proposed.minimum:g}), a cosine no question scores: it only "
            f"places level {anchor:g} at the cut ({separation.cut:.3f}) while relevance reads 1.00 at the answerable "
            f"probes' 99th percentile ({proposed.maximum:g}); levels below about "
            f"{-proposed.minimum / (proposed.maximum - proposed.minimum):.2f} threshold nothing"
        )
    if separation.method == "balanced-accuracy":
        warnings.append(
            f"answerable and off-topic scores overlap (AUC {separation.auc:.2f}): at any level some answerable "
            "questions are refused or some off-topic ones answered"
        )
    return CalibrationReport(
        store_id=sampled.store_id,
        embedding_model=sampled.embedding_model,
        documents=sampled.documents,
        documents_sampled=sampled.documents_sampled,
        chunks=sampled.chunks,
        probes=sampled.probes,
        answerable=Distribution.of(answerable),
        off_topic=Distribution.of(off_topic),
        separation=separation,
        level=sampled.level,
        anchor_level=anchor,
        current=sampled.current,
        proposed=proposed,
        current_saturated=saturated(answerable, sampled.current),
        proposed_saturated=saturated(answerable, proposed),
        predictions=predictions(answerable, off_topic, sampled.current, proposed, sampled.near_domain),
        warnings=tuple(warnings),
        near_domain_probes=len(sampled.near_domain),
        near_domain_refused_by_names=(
            sum(p.refused_by_names for p in sampled.near_domain) / len(sampled.near_domain)
            if sampled.near_domain
            else 0.0
        ),
    )
