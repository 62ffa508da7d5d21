"""Summary figures shared by the benchmarks (each script runs with bench/ on sys.path)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def percentiles(samples: Sequence[float]) -> tuple[float, float]:
    """p50 and p99 of ``samples``, in the samples' unit."""
    return float(np.percentile(samples, 50)), float(np.percentile(samples, 99))
