"""Timing channels: forbidden vs absent, asked alternately, compared with a two-sided Mann-Whitney U test.

Each pair asks the same kind of request about something that exists only where the caller may not read it and
about something that exists nowhere, in random order within the pair (so drift of a busy machine falls on both
sides). Per kind, the wall time the caller measures is tested and, where the service reports timings to the
caller, every step it reports (its total included), the smallest p multiplied by the number of steps tested
(Bonferroni). A channel leaks when p < 0.01.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from scipy.stats import mannwhitneyu

from bench.leakage.adapter import Reply

ALPHA = 0.01


@dataclass
class TimingResult:
    kind: str
    measure: str  # "wall" | "reported"
    pairs: int
    forbidden_median_ms: float
    absent_median_ms: float
    p: float

    @property
    def leak(self) -> bool:
        return self.p < ALPHA

    def as_dict(self) -> dict[str, object]:
        return {**vars(self), "leak": self.leak}


def compare_pairs(
    kind: str,
    pairs: int,
    forbidden: Callable[[int], Reply],
    absent: Callable[[int], Reply],
    rng: random.Random,
    warmup: int = 5,
) -> list[TimingResult]:
    """Run ``pairs`` alternating pairs (the argument is the pair's number) and test both measures."""
    for i in range(warmup):
        forbidden(i)
        absent(i)
    walls: tuple[list[float], list[float]] = ([], [])
    shown: tuple[dict[str, list[float]], dict[str, list[float]]] = ({}, {})
    for i in range(pairs):
        order = [(0, forbidden), (1, absent)]
        rng.shuffle(order)
        for side, make in order:
            reply = make(i)
            walls[side].append(reply.wall_ms)
            for step, ms in reply.timings_ms.items():
                shown[side].setdefault(step, []).append(ms)
    results = [_test(kind, "wall", walls)]
    steps = sorted(k for k in set(shown[0]) & set(shown[1]) if min(len(shown[0][k]), len(shown[1][k])) >= 20)
    if steps:
        tested = [_test(kind, f"reported {step}", (shown[0][step], shown[1][step])) for step in steps]
        best = min(tested, key=lambda t: t.p)
        best.p = min(1.0, best.p * len(tested))
        best.measure += f" (min of {len(tested)} steps, Bonferroni)"
        results.append(best)
    return results


def _test(kind: str, measure: str, samples: tuple[list[float], list[float]]) -> TimingResult:
    a, b = samples
    p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue) if a and b else 1.0
    return TimingResult(kind, measure, min(len(a), len(b)), _median(a), _median(b), p)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else float("nan")
