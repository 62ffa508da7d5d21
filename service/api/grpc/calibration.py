"""``AdminService.CalibrateStore``'s reply: a calibration report as protobuf messages."""

from __future__ import annotations

from service.api.grpc.stubs import admin_pb2
from service.domain.calibration import Distribution
from service.domain.calibration_report import CalibrationReport


def _scores(d: Distribution) -> admin_pb2.CalibrationScores:
    return admin_pb2.CalibrationScores(
        count=d.count,
        mean=d.mean,
        min=d.minimum,
        max=d.maximum,
        percentiles=[admin_pb2.CalibrationPercentile(percentile=p, score=v) for p, v in d.percentiles],
    )


def calibration_message(r: CalibrationReport) -> admin_pb2.CalibrateStoreResponse:
    """``CalibrateStoreResponse`` of ``r``."""
    return admin_pb2.CalibrateStoreResponse(
        store_id=r.store_id,
        embedding_model=r.embedding_model,
        documents=r.documents,
        documents_sampled=r.documents_sampled,
        chunks=r.chunks,
        title_probes=r.probes.titles,
        heading_probes=r.probes.headings,
        sentence_probes=r.probes.sentences,
        answerable=_scores(r.answerable),
        off_topic=_scores(r.off_topic),
        cut=r.separation.cut,
        separation_method=r.separation.method,
        balanced_accuracy=r.separation.balanced_accuracy,
        auc=r.separation.auc,
        level=r.level,
        anchor_level=r.anchor_level,
        current_min_threshold=r.current.minimum,
        current_max_threshold=r.current.maximum,
        proposed_min_threshold=r.proposed.minimum,
        proposed_max_threshold=r.proposed.maximum,
        current_saturated=r.current_saturated,
        proposed_saturated=r.proposed_saturated,
        predictions=[
            admin_pb2.CalibrationLevel(
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
            for p in r.predictions
        ],
        warnings=list(r.warnings),
        applied=r.applied,
        near_domain_probes=r.near_domain_probes,
        near_domain_refused_by_names=r.near_domain_refused_by_names,
    )
