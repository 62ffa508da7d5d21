"""Calibrating a store's score scale from two samples of top-1 scores: the pure arithmetic.

``answerable`` scores are the best cosine of probes drawn from the store's own
content (titles, headings, sentences); ``off_topic`` scores are those of
questions the store cannot answer. ``propose_scale`` puts the threshold of the
store's level at the best separation of the two samples and ``max_threshold``
near the answerable scores' 99th percentile, so that a calibrated ``relevance``
reads 1.00 for only the top ~1 % of them.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from acl.errors import InvalidArgument
from service.domain.threshold import Threshold

#: The narrowest scale a calibration proposes (max_threshold − min_threshold).
MIN_SPAN = 0.05
#: The answerable percentile that max_threshold is put at.
SATURATION_PERCENTILE = 99.0
#: The percentiles a report shows of each sample.
REPORT_PERCENTILES = (1, 5, 10, 25, 50, 75, 90, 95, 99)
#: The levels a report predicts answer and refusal rates at.
REPORT_LEVELS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
#: The store level the scale is anchored at when the store's own level is 0 (no threshold) or 1.
FALLBACK_LEVEL = 0.5
#: Where between the off-topic p95 (0) and the answerable p10 (1) a separated cut sits. Probes are drawn
#: from the store's own text and score higher than people's paraphrased questions: on 150 pages of the
#: PostgreSQL manual the lowest of 30 paraphrased questions scored 0.41, near the probes' p1 (0.40),
#: while their p10 was 0.55; so the cut leans toward the off-topic side rather than the midpoint.
SEPARATED_CUT_SHARE = 1 / 3


def percentile(scores: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0-100) of a non-empty sample, interpolated linearly between ranks."""
    if not scores:
        raise InvalidArgument("a percentile of no scores")
    ordered = sorted(scores)
    rank = (len(ordered) - 1) * min(100.0, max(0.0, p)) / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True, slots=True)
class Distribution:
    """A sample of top-1 scores summarised: count, mean, extremes and percentiles."""

    count: int
    mean: float
    minimum: float
    maximum: float
    percentiles: tuple[tuple[int, float], ...]

    @staticmethod
    def of(scores: Sequence[float]) -> Distribution:
        if not scores:
            raise InvalidArgument("a distribution of no scores")
        return Distribution(
            count=len(scores),
            mean=math.fsum(scores) / len(scores),
            minimum=min(scores),
            maximum=max(scores),
            percentiles=tuple((p, percentile(scores, p)) for p in REPORT_PERCENTILES),
        )

    def at(self, p: int) -> float:
        return dict(self.percentiles)[p]


@dataclass(frozen=True, slots=True)
class Separation:
    """Where the two samples part: the cut score, how it was found, and how well it separates."""

    cut: float
    #: ``separated`` (off-topic p95 below answerable p10: a third of the way from the one to the other),
    #: ``balanced-accuracy`` (they overlap: the middle of the cuts that maximise it) or ``none`` (no cut
    #: beats chance).
    method: str
    balanced_accuracy: float
    #: Probability that a random answerable probe outscores a random off-topic one (ties count half).
    auc: float


def answer_rate(answerable: Sequence[float], threshold: float | None) -> float:
    """Share of answerable probes whose best score reaches ``threshold`` (None: every one)."""
    if threshold is None or not answerable:
        return 1.0 if answerable else 0.0
    return sum(1 for s in answerable if s >= threshold) / len(answerable)


def refusal_rate(off_topic: Sequence[float], threshold: float | None) -> float:
    """Share of off-topic probes whose best score stays below ``threshold`` (None: none is refused)."""
    if threshold is None or not off_topic:
        return 0.0
    return sum(1 for s in off_topic if s < threshold) / len(off_topic)


def auc(answerable: Sequence[float], off_topic: Sequence[float]) -> float:
    """P(answerable > off-topic) + ½ P(tie), from sorted ranks (no quadratic loop)."""
    ordered = sorted(off_topic)
    wins = 0.0
    for score in answerable:
        below = bisect.bisect_left(ordered, score)
        ties = bisect.bisect_right(ordered, score) - below
        wins += below + ties / 2
    return wins / (len(answerable) * len(off_topic))


def separate(answerable: Sequence[float], off_topic: Sequence[float]) -> Separation:
    """The cut score that best tells answerable from off-topic probes (both samples non-empty)."""
    if not answerable or not off_topic:
        raise InvalidArgument("calibration needs answerable and off-topic scores")
    area = auc(answerable, off_topic)
    low, high = percentile(off_topic, 95), percentile(answerable, 10)
    if low < high:
        cut = low + SEPARATED_CUT_SHARE * (high - low)
        return Separation(cut, "separated", _balanced(answerable, off_topic, cut), area)
    values = sorted(set(answerable) | set(off_topic))
    # A cut in (values[i-1], values[i]] passes the same probes as values[i]; values[n] stands for "above all".
    scored = [(_balanced(answerable, off_topic, v), i) for i, v in enumerate(values)]
    scored.append((_balanced(answerable, off_topic, math.inf), len(values)))
    best = max(b for b, _ in scored)
    if best <= 0.5 + 1e-12:
        cut = (percentile(answerable, 50) + percentile(off_topic, 50)) / 2
        return Separation(cut, "none", _balanced(answerable, off_topic, cut), area)
    run_lo, run_hi = _widest_run([i for b, i in scored if b >= best - 1e-12], values)
    lower = values[run_lo - 1] if run_lo > 0 else values[0] - MIN_SPAN
    upper = values[run_hi] if run_hi < len(values) else values[-1] + MIN_SPAN
    cut = (lower + upper) / 2
    return Separation(cut, "balanced-accuracy", _balanced(answerable, off_topic, cut), area)


def _balanced(answerable: Sequence[float], off_topic: Sequence[float], cut: float) -> float:
    return (answer_rate(answerable, cut) + refusal_rate(off_topic, cut)) / 2


def _widest_run(indexes: list[int], values: list[float]) -> tuple[int, int]:
    """The run of consecutive indexes that spans the widest score interval: (first, last)."""
    runs: list[tuple[int, int]] = []
    for i in indexes:
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))

    def width(run: tuple[int, int]) -> float:
        lower = values[run[0] - 1] if run[0] > 0 else values[0] - MIN_SPAN
        upper = values[run[1]] if run[1] < len(values) else values[-1] + MIN_SPAN
        return upper - lower

    return max(runs, key=width)


def anchor_level(level: float) -> float:
    """The level the scale is fitted at: the store's own, or FALLBACK_LEVEL when it is 0 or 1."""
    return level if 0.0 < level < 1.0 else FALLBACK_LEVEL


def propose_scale(cut: float, answerable: Sequence[float], level: float) -> Threshold:
    """min/max such that ``level`` maps to ``cut`` and max sits at the answerable p99 where it can.

    Both stay in [-1, 1] and at least MIN_SPAN apart. When the p99 would push
    min below -1, min is -1 and max is lowered instead: the threshold at the
    store's level matters more than where relevance saturates.
    """
    if not 0.0 < level < 1.0:
        raise InvalidArgument(f"the anchor level must be strictly between 0 and 1, got {level}")
    cut = min(1.0 - MIN_SPAN * (1 - level), max(-1.0 + MIN_SPAN * level, cut))
    maximum = min(1.0, max(percentile(answerable, SATURATION_PERCENTILE), cut + MIN_SPAN * (1 - level)))
    minimum = (cut - level * maximum) / (1 - level)
    if minimum < -1.0:
        minimum = -1.0
        maximum = (cut + (1 - level)) / level
    return Threshold(_round(minimum), _round(maximum))


def _round(value: float) -> float:
    # Four decimals: a threshold is read and typed by people; the scores themselves are not that exact.
    return min(1.0, max(-1.0, round(value, 4)))


def saturated(answerable: Sequence[float], scale: Threshold) -> float:
    """Share of answerable probes whose relevance on ``scale`` reads 1.00."""
    return sum(1 for s in answerable if scale.relevance(s) >= 1.0) / len(answerable) if answerable else 0.0
