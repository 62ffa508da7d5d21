"""The calibration's arithmetic on synthetic score lists: separable, overlapping, degenerate, and the scale's bounds."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acl.errors import InvalidArgument
from service.domain.calibration import (
    MIN_SPAN,
    answer_rate,
    auc,
    percentile,
    propose_scale,
    refusal_rate,
    saturated,
    separate,
)
from service.domain.calibration_report import ProbeCounts, Sampled, build_report
from service.domain.threshold import Threshold

CURRENT = Threshold(0.10, 0.60)


def _uniform(n: int, low: float, high: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.uniform(low, high) for _ in range(n)]


def _sampled(answerable: list[float], off_topic: list[float], *, level: float = 0.5, documents: int = 50) -> Sampled:
    return Sampled(
        store_id="s",
        embedding_model="fake",
        level=level,
        current=CURRENT,
        documents=documents,
        documents_sampled=documents,
        chunks=10 * documents,
        probes=ProbeCounts(len(answerable), 0, 0),
        answerable=answerable,
        off_topic=off_topic,
    )


def test_percentile_interpolates_between_ranks() -> None:
    assert percentile([0.0, 1.0], 50) == pytest.approx(0.5)
    assert percentile([3.0, 1.0, 2.0], 0) == 1.0 and percentile([3.0, 1.0, 2.0], 100) == 3.0
    assert percentile([0.4], 99) == 0.4
    with pytest.raises(InvalidArgument):
        percentile([], 50)


def test_separable_samples_cut_between_off_topic_p95_and_answerable_p10() -> None:
    answerable = _uniform(400, 0.55, 0.90, 1)
    off_topic = _uniform(100, 0.00, 0.30, 2)
    separation = separate(answerable, off_topic)
    assert separation.method == "separated"
    low, high = percentile(off_topic, 95), percentile(answerable, 10)
    assert separation.cut == pytest.approx(low + (high - low) / 3)  # leaning toward off-topic
    assert separation.auc == 1.0 and separation.balanced_accuracy == 1.0

    report = build_report(_sampled(answerable, off_topic))
    proposed = report.proposed
    assert proposed.score_for(0.5) == pytest.approx(separation.cut, abs=1e-4)
    assert proposed.maximum == pytest.approx(percentile(answerable, 99), abs=1e-4)
    # About 1 % of answerable probes read relevance 1.00 on the proposed scale, most of them on the fixed one.
    assert report.proposed_saturated <= 0.02 < 0.5 < report.current_saturated
    at_default = next(p for p in report.predictions if p.level == 0.5)
    assert at_default.proposed_answer_rate == 1.0 and at_default.proposed_refusal_rate == 1.0
    # The p99 of 0.89 with the cut at 0.38 puts min below 0: the report says what that means.
    assert proposed.minimum < 0
    assert len(report.warnings) == 1 and "min_threshold is negative" in report.warnings[0]
    assert "levels below about 0.12 threshold nothing" in report.warnings[0]


def test_overlapping_samples_cut_where_balanced_accuracy_is_best() -> None:
    rng = random.Random(3)
    answerable = [min(1.0, rng.gauss(0.55, 0.10)) for _ in range(300)]
    off_topic = [rng.gauss(0.35, 0.10) for _ in range(120)]
    separation = separate(answerable, off_topic)
    assert separation.method == "balanced-accuracy"
    assert 0.8 < separation.auc < 0.99

    def balanced(t: float) -> float:
        return (answer_rate(answerable, t) + refusal_rate(off_topic, t)) / 2

    # Every cut passes the same probes as the smallest score at or above it: those are all the cuts there are.
    cuts = [*answerable, *off_topic, 2.0]
    assert separation.balanced_accuracy == pytest.approx(max(balanced(t) for t in cuts))
    assert balanced(separation.cut) == separation.balanced_accuracy
    report = build_report(_sampled(answerable, off_topic))
    assert any("overlap" in w for w in report.warnings)


def test_a_plateau_of_equal_cuts_is_cut_in_its_middle() -> None:
    # Outliers both ways, so the percentiles overlap; every cut in (0.1, 0.7] is equally good (crossing 0.4
    # loses one answerable probe and refuses one more off-topic one): the cut is the middle of that run.
    answerable = [0.05, 0.05, 0.4, *[0.7] * 7]
    off_topic = [*[0.1] * 7, 0.4, 0.8, 0.8]
    separation = separate(answerable, off_topic)
    assert separation.method == "balanced-accuracy"
    assert separation.cut == pytest.approx(0.4)
    assert separation.balanced_accuracy == pytest.approx(0.75)


def test_identical_samples_are_degenerate_and_say_so() -> None:
    scores = [0.4] * 20
    separation = separate(scores, scores)
    assert separation.method == "none" and separation.auc == 0.5
    report = build_report(_sampled(scores, list(scores)))
    assert any("score alike" in w for w in report.warnings)
    assert report.proposed.maximum - report.proposed.minimum >= MIN_SPAN - 1e-9


def test_answerable_below_off_topic_is_degenerate_too() -> None:
    assert separate([0.1, 0.2, 0.15], [0.5, 0.6]).method == "none"


def test_auc_counts_ties_half() -> None:
    assert auc([0.5], [0.5]) == 0.5
    assert auc([0.6, 0.4], [0.5]) == 0.5
    assert auc([0.9], [0.1, 0.2]) == 1.0


def test_level_zero_or_one_is_fitted_at_the_fallback_and_warned() -> None:
    answerable, off_topic = _uniform(50, 0.6, 0.9, 4), _uniform(50, 0.0, 0.3, 5)
    for level in (0.0, 1.0):
        report = build_report(_sampled(answerable, off_topic, level=level))
        assert report.anchor_level == 0.5
        assert any("fitted at level 0.5" in w for w in report.warnings)


def test_few_documents_make_a_rough_estimate() -> None:
    report = build_report(_sampled(_uniform(20, 0.6, 0.9, 6), _uniform(60, 0.0, 0.3, 7), documents=4))
    assert any("only 4 document(s)" in w and "rough" in w for w in report.warnings)


def test_a_high_level_lowers_max_rather_than_push_min_below_minus_one() -> None:
    scale = propose_scale(0.1, [0.95] * 10, 0.9)
    assert scale.minimum == -1.0
    assert scale.score_for(0.9) == pytest.approx(0.1, abs=1e-4)


def test_a_cut_at_the_top_keeps_the_minimum_span() -> None:
    scale = propose_scale(1.0, [1.0] * 5, 0.5)
    assert scale.maximum <= 1.0 and scale.maximum - scale.minimum >= MIN_SPAN - 1e-4


scores = st.lists(st.floats(-1, 1, allow_nan=False), min_size=1, max_size=40)


@given(scores, scores, st.floats(0.01, 0.99))
def test_every_proposal_is_a_valid_scale_that_puts_the_cut_at_the_level(
    answerable: list[float], off_topic: list[float], level: float
) -> None:
    separation = separate(answerable, off_topic)
    scale = propose_scale(separation.cut, answerable, level)
    assert -1.0 <= scale.minimum <= scale.maximum <= 1.0
    assert scale.maximum - scale.minimum >= MIN_SPAN - 2e-4
    reachable = min(1.0 - MIN_SPAN * (1 - level), max(-1.0 + MIN_SPAN * level, separation.cut))
    threshold = scale.score_for(level)
    assert threshold is not None and threshold == pytest.approx(reachable, abs=2e-4)
    assert 0.0 <= saturated(answerable, scale) <= 1.0


def test_near_domain_probes_are_refused_by_their_names_or_the_threshold() -> None:
    import dataclasses

    from service.domain.calibration_report import NearProbe

    near = [NearProbe(0.7, True), NearProbe(0.7, False), NearProbe(0.2, False), NearProbe(0.9, True)]
    sampled = _sampled(_uniform(400, 0.55, 0.90, 1), _uniform(100, 0.0, 0.3, 2))
    report = build_report(dataclasses.replace(sampled, near_domain=near))
    assert report.near_domain_probes == 4 and report.near_domain_refused_by_names == 0.5
    at = {p.level: p for p in report.predictions}
    # On the current scale (0.10-0.60): the two probes their names refuse, and the one under 0.35 at level 0.5;
    # at level 0.9 (0.55) still those three — the probe at 0.70 that names nothing foreign passes both.
    assert at[0.5].current_near_refusal_rate == 0.75
    assert at[0.9].current_near_refusal_rate == 0.75
    assert report.to_dict()["probes"]["near_domain"] == 4
