"""The relevancy level → score threshold interpolation, and back."""

from __future__ import annotations

import math
from dataclasses import dataclass

from acl.errors import InvalidArgument


def parse_level(value: object) -> float | None:
    """A relevancy level from user input: None, or a finite number in [0, 1].

    Strings are accepted as numbers ("0.3"); anything else is InvalidArgument.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidArgument("relevancy level must be a number between 0 and 1, got a boolean")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise InvalidArgument(f"relevancy level must be a number between 0 and 1, got {value!r}") from None
    if not isinstance(value, (int, float)):
        raise InvalidArgument(f"relevancy level must be a number between 0 and 1, got {type(value).__name__}")
    level = float(value)
    if math.isnan(level) or not 0.0 <= level <= 1.0:
        raise InvalidArgument(f"relevancy level must be between 0 and 1, got {value}")
    return level


@dataclass(frozen=True, slots=True)
class Threshold:
    """A store's score scale: level 0 ↦ ``minimum``, level 1 ↦ ``maximum``."""

    minimum: float
    maximum: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.minimum) and math.isfinite(self.maximum)):
            raise InvalidArgument("thresholds must be finite numbers")
        if self.minimum > self.maximum:
            raise InvalidArgument(f"min_threshold ({self.minimum}) must not exceed max_threshold ({self.maximum})")

    def score_for(self, level: float) -> float | None:
        """The score threshold for ``level``; None (no threshold) for level 0."""
        if level == 0.0:
            return None
        return self.minimum + level * (self.maximum - self.minimum)

    def relevance(self, score: float) -> float:
        """``score`` on the same interpolation, clamped to [0, 1]."""
        span = self.maximum - self.minimum
        if span <= 0:
            return 1.0 if score >= self.maximum else 0.0
        return min(1.0, max(0.0, (score - self.minimum) / span))
