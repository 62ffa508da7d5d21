"""The efSearch a calibrated HNSW graph needs per filter selectivity and k (what calibration leaves behind)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

#: The k at which a graph is calibrated first.
CALIBRATION_K = 10
#: The k of a second calibration: the engine's usual search asks for 60 rows (30 fusion candidates, twice
#: as many fetched in case the access check drops some). Scaled linearly from k=10 that search got 6x the
#: efSearch, which is not what k=60 needs either way: on a 100k graph about 2x unfiltered, and 15x for a
#: caller reading half the rows (``bench/wide_k.py``).
WIDE_K = 60

Points = tuple[tuple[float, int], ...]


@dataclass(frozen=True, slots=True)
class EfPolicy:
    """The efSearch that met the recall target at k=10 (``points``) and k=60 (``wide``), per filter selectivity.

    ``points`` are (selectivity, efSearch), broadest first. Between two points
    efSearch is interpolated geometrically; above the first it is the first's;
    below the last it grows as 1/selectivity if ``extrapolate``, else the graph
    may not serve the filter. Above k=10, efSearch is interpolated
    geometrically in k between the two calibrations up to k=60 and grows
    linearly above; a filter narrower than any ``wide`` met the target for
    (k=60 missed it there within the largest efSearch, or the store was too
    small to tell) is not served above k=10. ``wide`` None (an uncalibrated
    model, a graph saved before k=60 was measured): efSearch scales linearly
    from ``points`` above k=10.
    """

    points: Points
    extrapolate: bool = False
    wide: Points | None = None

    @classmethod
    def model(cls, ef_min: int, per_k_over_selectivity: float) -> EfPolicy:
        """The uncalibrated assumption efSearch = max(ef_min, c·k/selectivity) at any selectivity."""
        ef_at_one = max(ef_min, math.ceil(per_k_over_selectivity * CALIBRATION_K))
        return cls(((1.0, ef_at_one),), extrapolate=True)

    @property
    def usable(self) -> bool:
        """False when the graph met the recall target for no filter at all."""
        return bool(self.points)

    @property
    def narrowest(self) -> float:
        """The narrowest selectivity the graph may serve (0: any, inf: none)."""
        if not self.points:
            return math.inf
        return 0.0 if self.extrapolate else self.points[-1][0]

    def ef(self, k: int, selectivity: float) -> int | None:
        """efSearch for a filter of this selectivity, or None if the graph may not serve it."""
        if not self.points or selectivity <= 0 or selectivity < self.narrowest:
            return None
        ef = _at(self.points, selectivity, self.extrapolate)
        if k <= CALIBRATION_K or self.wide is None:
            return max(k, math.ceil(ef * max(1.0, k / CALIBRATION_K)))
        if not self.wide or selectivity < self.wide[-1][0]:
            return None  # k=60 was not shown to keep recall this narrow: exact
        wide = _at(self.wide, selectivity, False)
        if k <= WIDE_K:
            scaled = ef * float((wide / ef) ** (math.log(k / CALIBRATION_K) / math.log(WIDE_K / CALIBRATION_K)))
        else:
            scaled = wide * k / WIDE_K
        return max(k, math.ceil(scaled))


def _at(points: Points, selectivity: float, extrapolate: bool) -> float:
    """``points``' efSearch at ``selectivity`` (the caller checked it is served)."""
    ef = float(points[0][1])
    for (s_hi, e_hi), (s_lo, e_lo) in itertools.pairwise(points):
        if s_lo <= selectivity < s_hi:
            ef = e_hi * (e_lo / e_hi) ** (math.log(s_hi / selectivity) / math.log(s_hi / s_lo))
    s_last, e_last = points[-1]
    if selectivity < s_last and extrapolate:
        ef = e_last * s_last / selectivity
    return ef
