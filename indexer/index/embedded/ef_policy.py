"""The efSearch a calibrated HNSW graph needs per filter selectivity (what calibration leaves behind)."""

from __future__ import annotations

import math
from dataclasses import dataclass

#: The k at which a graph is calibrated; efSearch scales with k above it.
CALIBRATION_K = 10


@dataclass(frozen=True, slots=True)
class EfPolicy:
    """The efSearch that met the recall target at k=10, per filter selectivity.

    ``points`` are (selectivity, efSearch), broadest first. Between two points
    efSearch is interpolated geometrically; above the first it is the first's;
    below the last it grows as 1/selectivity if ``extrapolate``, else the graph
    may not serve the filter. efSearch scales with k above 10.
    """

    points: tuple[tuple[float, int], ...]
    extrapolate: bool = False

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
        ef = float(self.points[0][1])
        for (s_hi, e_hi), (s_lo, e_lo) in zip(self.points, self.points[1:], strict=False):
            if s_lo <= selectivity < s_hi:
                ef = e_hi * (e_lo / e_hi) ** (math.log(s_hi / selectivity) / math.log(s_hi / s_lo))
        s_last, e_last = self.points[-1]
        if selectivity < s_last:
            ef = e_last * s_last / selectivity
        return max(k, math.ceil(ef * max(1.0, k / CALIBRATION_K)))
